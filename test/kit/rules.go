package kit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// RuleLoader loads rule groups into Prometheus, replacing those it loaded
// before. *Prometheus is one; PrometheusFiles is another.
type RuleLoader interface {
	SetRules(ctx context.Context, groups []monitoringv1.RuleGroup) error
}

var (
	_ RuleLoader = (*Prometheus)(nil)
	_ RuleLoader = PrometheusFiles{}
)

// ruleFile is the rule file format of Prometheus: prometheus-operator's
// RuleGroup marshals the same (name, interval, rules; each rule's record or
// alert, expr, for, labels, annotations).
type ruleFile struct {
	Groups []monitoringv1.RuleGroup `json:"groups"`
}

// MarshalRules returns groups as a Prometheus rule file.
func MarshalRules(groups []monitoringv1.RuleGroup) ([]byte, error) {
	if groups == nil {
		groups = []monitoringv1.RuleGroup{}
	}
	out, err := yaml.Marshal(ruleFile{Groups: groups})
	if err != nil {
		return nil, fmt.Errorf("encoding rule groups: %w", err)
	}
	return out, nil
}

// RulesOf reads every PrometheusRule on a cluster, as prometheus-operator
// would, and returns their groups, each named "<namespace>/<rule>/<group>"
// so that groups of different objects never clash.
func RulesOf(ctx context.Context, c client.Client) ([]monitoringv1.RuleGroup, error) {
	list := &monitoringv1.PrometheusRuleList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing PrometheusRules: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var groups []monitoringv1.RuleGroup
	for _, pr := range list.Items {
		for _, g := range pr.Spec.Groups {
			g := *g.DeepCopy()
			g.Name = pr.Namespace + "/" + pr.Name + "/" + g.Name
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// RuleSync plays prometheus-operator for a test or the local fleet: every
// Interval it reads the PrometheusRules of every cluster and, when their
// union changed, loads it into Loader. Picchu writes the same rules on every
// cluster of a fleet, so groups are told apart by
// "<namespace>/<rule>/<group>" and the first cluster in name order wins.
// Clusters that fail to answer are left out of the union; when none
// answers, nothing is loaded. A failed load is tried again at the next
// interval.
type RuleSync struct {
	// Clusters are read in this order (see SortedClients).
	Clusters []NamedClient
	Loader   RuleLoader
	// Interval is how often the rules are read; each cluster has
	// max(Interval, 1s) to answer.
	Interval time.Duration
	// Logf receives what the sync has to say: a cluster that fails to
	// answer and answers again, a load that fails (each once, when it starts
	// or changes), the rules loaded (log.Printf when nil).
	Logf func(format string, args ...any)
}

// Run syncs until ctx is done.
func (s RuleSync) Run(ctx context.Context) {
	if s.Logf == nil {
		s.Logf = log.Printf
	}
	report := NewReporter(s.Logf, "listing PrometheusRules")
	var loaded []byte
	lastErr := ""
	tick := time.NewTicker(s.Interval)
	defer tick.Stop()
	for {
		data, err := s.once(ctx, loaded, report)
		switch {
		case err == nil:
			loaded, lastErr = data, ""
		case ctx.Err() == nil && err.Error() != lastErr:
			// Logged when it starts or changes, not every interval.
			lastErr = err.Error()
			s.Logf("%v (trying again every %s)", err, s.Interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// once loads the union of the clusters' rules unless it is what was loaded
// last, which loaded holds as a rule file. It returns the rule file loaded
// now.
func (s RuleSync) once(ctx context.Context, loaded []byte, report *Reporter) ([]byte, error) {
	var groups []monitoringv1.RuleGroup
	seen := map[string]bool{}
	answered := 0
	for _, r := range ReadAll(ctx, s.Clusters, ReadTimeout(s.Interval), RulesOf) {
		if r.Err != nil {
			if ctx.Err() == nil {
				report.Failed(r.Cluster, r.Err)
			}
			continue
		}
		report.OK(r.Cluster)
		answered++
		for _, g := range r.Value {
			if !seen[g.Name] {
				seen[g.Name] = true
				groups = append(groups, g)
			}
		}
	}
	if answered == 0 {
		return loaded, nil
	}
	// Sorted, so that the file does not depend on which clusters answered.
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	data, err := MarshalRules(groups)
	if err != nil {
		return loaded, fmt.Errorf("loading rules: %w", err)
	}
	if loaded != nil && bytes.Equal(data, loaded) {
		return loaded, nil
	}
	if err := s.Loader.SetRules(ctx, groups); err != nil {
		return loaded, fmt.Errorf("loading %d rule groups: %w", len(groups), err)
	}
	s.Logf("loaded %d rule groups", len(groups))
	return data, nil
}

// reloadTimeout bounds a reload of PrometheusFiles when HTTP is nil.
const reloadTimeout = 30 * time.Second

// PrometheusFiles loads rules into a Prometheus run with
// --web.enable-lifecycle and RulesFile among its rule_files (as
// PrometheusArgs runs it, with PrometheusRulesFile).
type PrometheusFiles struct {
	// RulesFile is the rule file the groups are written to; its directory
	// must exist.
	RulesFile string
	// URL is Prometheus' base URL, say http://127.0.0.1:9090.
	URL string
	// HTTP is the client that asks for reloads (one with a 30s timeout when nil).
	HTTP *http.Client
}

// SetRules writes groups to RulesFile, atomically (to a temporary file
// renamed over it, so that Prometheus never reads half of it), and asks
// Prometheus to reload with POST /-/reload, which answers once the rules
// are loaded, or with the reason they are not.
func (p PrometheusFiles) SetRules(ctx context.Context, groups []monitoringv1.RuleGroup) error {
	data, err := MarshalRules(groups)
	if err != nil {
		return fmt.Errorf("setting the rules of Prometheus at %s: %w", p.URL, err)
	}
	if err := writeAtomically(p.RulesFile, data); err != nil {
		return fmt.Errorf("setting the rules of Prometheus at %s: %w", p.URL, err)
	}
	if err := p.reload(ctx); err != nil {
		return fmt.Errorf("setting the rules of Prometheus at %s: %w", p.URL, err)
	}
	return nil
}

// reload POSTs /-/reload.
func (p PrometheusFiles) reload(ctx context.Context) error {
	hc := p.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: reloadTimeout}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(p.URL, "/")+"/-/reload", nil)
	if err != nil {
		return fmt.Errorf("reloading: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("reloading: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("reloading: POST /-/reload: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// writeAtomically writes data to a temporary file beside path, then renames
// it to path.
func writeAtomically(path string, data []byte) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// Hidden and not ending in .yaml or .yml, so no rule_files glob takes it.
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	// CreateTemp makes the file private; Prometheus may run as another user.
	if err := f.Chmod(0o644); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		return cleanup(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
