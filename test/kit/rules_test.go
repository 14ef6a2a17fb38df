package kit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/medium/picchu/test/kit"
)

var testGroups = []monitoringv1.RuleGroup{{
	Name:  "shop-production/shop-slo/slo",
	Rules: []monitoringv1.Rule{{Alert: "ShopErrors", Expr: intstr.FromString("vector(1) > 0")}},
}}

// TestPrometheusFiles_SetRules checks that the rules are in the file when
// Prometheus is asked to reload, and that nothing else is left beside it.
func TestPrometheusFiles_SetRules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	want, err := kit.MarshalRules(testGroups)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reloads []string // method, path and file content of each request
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := os.ReadFile(path)
		if err != nil {
			data = []byte(err.Error())
		}
		mu.Lock()
		reloads = append(reloads, r.Method+" "+r.URL.Path+"\n"+string(data))
		mu.Unlock()
	}))
	defer prom.Close()

	p := kit.PrometheusFiles{RulesFile: path, URL: prom.URL + "/"}
	if err := p.SetRules(context.Background(), testGroups); err != nil {
		t.Fatalf("SetRules: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if wantReload := "POST /-/reload\n" + string(want); len(reloads) != 1 || reloads[0] != wantReload {
		t.Errorf("Prometheus received %q, want one %q", reloads, wantReload)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "rules.yaml" {
		t.Errorf("the directory holds %v, want only rules.yaml", entries)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("rules.yaml: %v, %v; want mode 0644", info, err)
	}
}

// TestPrometheusFiles_SetRulesFails checks the errors of a failed reload and
// of a rule file that cannot be written.
func TestPrometheusFiles_SetRulesFails(t *testing.T) {
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, "failed to reload config: bad rule\n")
	}))
	defer prom.Close()
	p := kit.PrometheusFiles{RulesFile: filepath.Join(t.TempDir(), "rules.yaml"), URL: prom.URL, HTTP: prom.Client()}
	err := p.SetRules(context.Background(), testGroups)
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error: failed to reload config: bad rule") {
		t.Errorf("SetRules with a failing reload: %v, want the status and the body", err)
	}

	p.RulesFile = filepath.Join(t.TempDir(), "missing", "rules.yaml")
	err = p.SetRules(context.Background(), testGroups)
	if err == nil || !strings.Contains(err.Error(), p.RulesFile) {
		t.Errorf("SetRules into a missing directory: %v, want an error naming %s", err, p.RulesFile)
	}
}
