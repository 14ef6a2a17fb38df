package mesh

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"

	"github.com/medium/picchu/test/harness"
)

// RuleLoader loads rule groups into Prometheus, replacing those it loaded
// before. *harness.Prometheus is one; PrometheusFiles is another.
type RuleLoader interface {
	SetRules(ctx context.Context, groups []monitoringv1.RuleGroup) error
}

var (
	_ RuleLoader = (*harness.Prometheus)(nil)
	_ RuleLoader = PrometheusFiles{}
)

// syncRules plays prometheus-operator until ctx is done: every interval it
// reads the PrometheusRules of every cluster and, when their union changed,
// loads it. Picchu writes the same rules on every cluster of a fleet, so
// groups are told apart by "<namespace>/<rule>/<group>" and the first cluster
// in name order wins. Clusters that fail to answer are left out of the union;
// when none answers, nothing is loaded. A failed load is tried again at the
// next interval.
func (m *Mesh) syncRules(ctx context.Context) {
	report := newReporter(m.logf, "listing PrometheusRules")
	var loaded []byte
	lastErr := ""
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		data, err := m.syncRulesOnce(ctx, loaded, report)
		switch {
		case err == nil:
			loaded, lastErr = data, ""
		case ctx.Err() == nil && err.Error() != lastErr:
			// Logged when it starts or changes, not every interval.
			lastErr = err.Error()
			m.logf("%v (trying again every %s)", err, m.interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// syncRulesOnce loads the union of the clusters' rules unless it is what
// was loaded last, which loaded holds as a rule file. It returns the rule
// file loaded now.
func (m *Mesh) syncRulesOnce(ctx context.Context, loaded []byte, report *reporter) ([]byte, error) {
	var groups []monitoringv1.RuleGroup
	seen := map[string]bool{}
	answered := 0
	for _, r := range readClusters(ctx, m.clusters, m.readTimeout(), harness.RulesOf) {
		if r.err != nil {
			if ctx.Err() == nil {
				report.failed(r.cluster, r.err)
			}
			continue
		}
		report.ok(r.cluster)
		answered++
		for _, g := range r.value {
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
	data, err := harness.MarshalRules(groups)
	if err != nil {
		return loaded, fmt.Errorf("loading rules: %w", err)
	}
	if loaded != nil && bytes.Equal(data, loaded) {
		return loaded, nil
	}
	if err := m.rules.SetRules(ctx, groups); err != nil {
		return loaded, fmt.Errorf("loading %d rule groups: %w", len(groups), err)
	}
	m.logf("loaded %d rule groups", len(groups))
	return data, nil
}

// reloadTimeout bounds a reload of PrometheusFiles when HTTP is nil.
const reloadTimeout = 30 * time.Second

// PrometheusFiles loads rules into a Prometheus started elsewhere with
// --web.enable-lifecycle and RulesFile among its rule_files.
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
// Prometheus to reload with POST /-/reload.
func (p PrometheusFiles) SetRules(ctx context.Context, groups []monitoringv1.RuleGroup) error {
	data, err := harness.MarshalRules(groups)
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

// reload asks Prometheus to load the rules again.
func (p PrometheusFiles) reload(ctx context.Context) error {
	httpClient := p.HTTP
	if httpClient == nil {
		httpClient = &http.Client{Timeout: reloadTimeout}
	}
	return harness.ReloadPrometheus(ctx, httpClient, p.URL)
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
