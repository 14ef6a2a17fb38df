package prometheus_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/preflight"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
	"github.com/medium/picchu/test/kit"
)

// Label values that PromQL must quote with care.
const (
	awkwardApp = `we"ird\app`
	awkwardTag = `v{1}, tag=~".*"`
)

// alwaysFiring returns an alert rule that fires from its first evaluation,
// in the namespace of its app (inNamespace) unless labels name another.
func alwaysFiring(name string, labels map[string]string) monitoringv1.Rule {
	now := monitoringv1.Duration("0s")
	if _, ok := labels["namespace"]; !ok {
		labels["namespace"] = inNamespace(labels["app"])
	}
	return monitoringv1.Rule{Alert: name, Expr: intstr.FromString("vector(1)"), For: &now, Labels: labels}
}

// inNamespace is the namespace of app's rules in these tests.
func inNamespace(app string) string { return app + "-production" }

// appIn is app in its namespace, of any cluster.
func appIn(app string) scope.App { return scope.App{Name: app, Namespace: inNamespace(app)} }

// startPrometheus starts a real Prometheus that cleanup closes.
func startPrometheus(t *testing.T) *kit.Prometheus {
	t.Helper()
	prom, err := kit.StartPrometheus(context.Background(), kit.PrometheusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prom.Close(); err != nil {
			t.Errorf("closing Prometheus: %v", err)
		}
	})
	return prom
}

// TestFiringAlerts_RealPrometheus asks a real Prometheus, evaluating alerts
// that always fire (and one that stays pending), which alerts fire for
// several apps and tags.
func TestFiringAlerts_RealPrometheus(t *testing.T) {
	ctx := context.Background()
	prom := startPrometheus(t)
	anHour := monitoringv1.Duration("1h")
	groups := []monitoringv1.RuleGroup{
		{Name: "slo", Rules: []monitoringv1.Rule{
			alwaysFiring("SLOErrorsA1", map[string]string{"app": "a", "tag": "v1", "slo": "true"}),
			alwaysFiring("AnotherSLOA1", map[string]string{"app": "a", "tag": "v1", "slo": "true"}),
			// Two series of one alert name.
			alwaysFiring("TwiceA1", map[string]string{"app": "a", "tag": "v1", "slo": "true", "severity": "page"}),
			alwaysFiring("TwiceA1", map[string]string{"app": "a", "tag": "v1", "slo": "true", "severity": "ticket"}),
			alwaysFiring("SLOErrorsB1", map[string]string{"app": "b", "tag": "v1", "slo": "true"}),
			alwaysFiring("NotSLOA1", map[string]string{"app": "a", "tag": "v1"}),
			alwaysFiring("AwkwardSLO", map[string]string{"app": awkwardApp, "tag": awkwardTag, "slo": "true"}),
			// Another team's app of the same name and tag, in its own
			// namespace, and a rule that names no namespace.
			alwaysFiring("OtherTeamA1", map[string]string{"app": "a", "tag": "v1", "slo": "true", "namespace": "a-other"}),
			alwaysFiring("NoNamespaceA1", map[string]string{"app": "a", "tag": "v1", "slo": "true", "namespace": ""}),
		}},
		{Name: "canary", Rules: []monitoringv1.Rule{
			alwaysFiring("CanaryA2", map[string]string{"app": "a", "tag": "v2", "slo": "true", "canary": "true"}),
			alwaysFiring("CanaryNotSLOA1", map[string]string{"app": "a", "tag": "v1", "canary": "true"}),
			alwaysFiring("AwkwardCanary", map[string]string{"app": awkwardApp, "tag": awkwardTag, "canary": "true"}),
			alwaysFiring("OtherTeamCanaryA2", map[string]string{"app": "a", "tag": "v2", "canary": "true", "namespace": "a-other"}),
			{
				Alert: "PendingCanaryA1", Expr: intstr.FromString("vector(1)"), For: &anHour,
				Labels: map[string]string{"app": "a", "tag": "v1", "slo": "true", "canary": "true", "namespace": inNamespace("a")},
			},
		}},
	}
	if err := prom.SetRules(ctx, groups); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		app, tag string
		canary   bool
		want     []string
	}{
		{"a", "v1", false, []string{"AnotherSLOA1", "SLOErrorsA1", "TwiceA1"}},
		{"a", "v1", true, []string{"CanaryNotSLOA1"}},
		{"a", "v2", false, []string{"CanaryA2"}},
		{"a", "v2", true, []string{"CanaryA2"}},
		{"b", "v1", false, []string{"SLOErrorsB1"}},
		{"b", "v1", true, []string{}},
		{"b", "v2", false, []string{}},
		{"c", "v1", false, []string{}},
		{awkwardApp, awkwardTag, false, []string{"AwkwardSLO"}},
		{awkwardApp, awkwardTag, true, []string{"AwkwardCanary"}},
		{awkwardApp, "v1", true, []string{}},
	}
	check := func(c *prometheus.Client) error {
		for _, tc := range cases {
			got, err := c.FiringAlerts(ctx, appIn(tc.app), tc.tag, tc.canary)
			if err != nil {
				return err
			}
			if got == nil || !slices.Equal(got, tc.want) {
				return fmt.Errorf("FiringAlerts(%q, %q, %v) = %#v, want %#v", tc.app, tc.tag, tc.canary, got, tc.want)
			}
		}
		return nil
	}

	// A short TTL, so that polling sees the alerts as they start firing.
	polling, err := prometheus.New(prometheus.Config{Address: prom.URL(), TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, time.Minute, "the alerts fire", func() error { return check(polling) })

	// With the default TTL, one cached SLO result answers every app and tag.
	c, err := prometheus.New(prometheus.Config{Address: prom.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if err := check(c); err != nil {
		t.Fatal(err)
	}
	canaryQueries := map[string]bool{}
	for _, tc := range cases {
		if tc.canary {
			canaryQueries[prometheus.CanaryAlertsQuery(appIn(tc.app), tc.tag)] = true
		}
	}
	if got, want := c.CacheLen(), 1+len(canaryQueries); got != want {
		t.Errorf("CacheLen() = %d, want %d: the SLO query and %d canary queries", got, want, len(canaryQueries))
	}
}

// TestSeries_RealPrometheus asks a real Prometheus the queries of
// Clusters' preflight checks (preflight.Queries): the firing alerts they
// name, narrowed by their labels, and a query of their own.
func TestSeries_RealPrometheus(t *testing.T) {
	ctx := context.Background()
	prom := startPrometheus(t)
	anHour := monitoringv1.Duration("1h")
	if err := prom.SetRules(ctx, []monitoringv1.RuleGroup{{Name: "clusters", Rules: []monitoringv1.Rule{
		alwaysFiring("KubeNodeNotReady", map[string]string{"cluster": "west"}),
		alwaysFiring("EtcdNoLeader", map[string]string{"cluster": "east"}),
		alwaysFiring("Unnamed", map[string]string{"cluster": "west"}),
		{Alert: "StillPending", Expr: intstr.FromString("vector(1)"), For: &anHour, Labels: map[string]string{"cluster": "west"}},
	}}}); err != nil {
		t.Fatal(err)
	}
	c, err := prometheus.New(prometheus.Config{Address: prom.URL(), TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"KubeNodeNotReady", "EtcdNoLeader", "StillPending"}
	cases := []struct {
		query string
		want  []string
	}{
		{preflight.AlertsQuery(&picchuv1alpha1.ClusterPreflight{Alerts: names, AlertLabels: map[string]string{"cluster": "west"}}), []string{"KubeNodeNotReady"}},
		{preflight.AlertsQuery(&picchuv1alpha1.ClusterPreflight{Alerts: names, AlertLabels: map[string]string{"cluster": "east"}}), []string{"EtcdNoLeader"}},
		{preflight.AlertsQuery(&picchuv1alpha1.ClusterPreflight{Alerts: []string{"StillPending"}}), []string{}},
		{`label_replace(vector(1), "cluster", "west", "", "")`, []string{`{cluster="west"}`}},
		{"vector(1) > 2", []string{}},
	}
	kit.Eventually(t, time.Minute, "the answers", func() error {
		for _, tc := range cases {
			got, err := c.Series(ctx, tc.query)
			if err != nil {
				return err
			}
			slices.Sort(got)
			if got == nil || !slices.Equal(got, tc.want) {
				return fmt.Errorf("Series(%s) = %#v, want %#v", tc.query, got, tc.want)
			}
		}
		return nil
	})
	if _, err := c.Series(ctx, "sum(("); err == nil || !strings.Contains(err.Error(), "querying Prometheus at") {
		t.Errorf("a query that does not parse: %v, want an error naming Prometheus and the query", err)
	}
}

// TestClusters_RealPrometheus asks a real Prometheus, scraping simulated
// Istio counters of a build in two clusters and recording an SLO's total
// and errors by tag and cluster, which clusters fired an alert, which
// counted requests of the build, and how many requests and errors each
// counted over a window.
func TestClusters_RealPrometheus(t *testing.T) {
	ctx := context.Background()
	traffic, err := kit.StartTraffic()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traffic.Close)
	traffic.SetIn("east", "shop", "v2", 20, 0.5)
	traffic.SetIn("west", "shop", "v2", 20, 0)
	traffic.SetIn("west", "shop", "v1", 0, 0) // a series, but no request
	prom, err := kit.StartPrometheus(ctx, kit.PrometheusConfig{ScrapeTargets: []string{traffic.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prom.Close() })
	sliQuery := func(selector string) string {
		return fmt.Sprintf(
			`sum by (tag, cluster) (label_replace(label_replace(istio_requests_total{%s}, "tag", "$1", "destination_version", "(.*)"), "cluster", "$1", "destination_cluster", "(.*)"))`,
			selector)
	}
	sli := prometheus.SLI{
		TotalQuery: sliQuery(`destination_app="shop"`), ErrorQuery: sliQuery(`destination_app="shop",response_code=~"5.."`),
		RecordedTotal: "shop:availability:total", RecordedErrors: "shop:availability:errors",
	}
	if err := prom.SetRules(ctx, []monitoringv1.RuleGroup{
		{Name: "record", Rules: []monitoringv1.Rule{
			{Record: sli.RecordedTotal, Expr: intstr.FromString(sli.TotalQuery), Labels: map[string]string{"namespace": inNamespace("shop")}},
			{Record: sli.RecordedErrors, Expr: intstr.FromString(sli.ErrorQuery), Labels: map[string]string{"namespace": inNamespace("shop")}},
			// Another team's rule writing the same series in its own
			// namespace counts for neither build.
			{Record: sli.RecordedTotal, Expr: intstr.FromString(`label_replace(vector(1000), "tag", "v1", "", "")`), Labels: map[string]string{"namespace": "shop-other"}},
		}},
		{Name: "alerts", Rules: []monitoringv1.Rule{
			alwaysFiring("HighErrorRate", map[string]string{"app": "shop", "tag": "v2", "slo": "true", "cluster": "east"}),
			alwaysFiring("HighLatency", map[string]string{"app": "shop", "tag": "v2", "slo": "true"}),
			alwaysFiring("ZoneDown", map[string]string{"app": "shop", "tag": "v2", "slo": "true", "zone": "east"}),
		}},
	}); err != nil {
		t.Fatal(err)
	}
	c, err := prometheus.New(prometheus.Config{Address: prom.URL(), TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	shop := appIn("shop")
	kit.Eventually(t, time.Minute, "the alerts fire, each with its cluster", func() error {
		got, err := c.FiringAlertsIn(ctx, shop, "v2", false)
		if err != nil {
			return err
		}
		want := []prometheus.Alert{{Name: "HighErrorRate", Cluster: "east"}, {Name: "HighLatency"}, {Name: "ZoneDown"}}
		if !slices.Equal(got, want) {
			return fmt.Errorf("FiringAlertsIn = %+v, want %+v", got, want)
		}
		return nil
	})
	// By another label, the same alert names no cluster.
	zones, err := prometheus.New(prometheus.Config{Address: prom.URL(), ClusterLabel: "zone"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := zones.FiringAlertsIn(ctx, shop, "v2", false)
	if err != nil || !slices.Contains(got, prometheus.Alert{Name: "ZoneDown", Cluster: "east"}) || !slices.Contains(got, prometheus.Alert{Name: "HighErrorRate"}) {
		t.Errorf("FiringAlertsIn by zone = %+v, %v", got, err)
	}

	kit.Eventually(t, time.Minute, "v2 counted in both clusters, v1 in none", func() error {
		got, err := c.ReachedIn(ctx, shop, "v2", []string{"shop:availability:total", "shop:availability:errors"})
		if err != nil {
			return err
		}
		want := map[string][]string{"shop:availability:total": {"east", "west"}, "shop:availability:errors": {"east"}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("ReachedIn(v2) = %v, want %v", got, want)
		}
		if got, err := c.ReachedIn(ctx, shop, "v1", []string{"shop:availability:total"}); err != nil || len(got) != 0 {
			return fmt.Errorf("ReachedIn(v1) = %v, %v; want nothing", got, err)
		}
		return nil
	})
	// 20 requests a second: about 200 in 10 s in each cluster, half of
	// them errors in east.
	kit.Eventually(t, time.Minute, "counts over 10 s", func() error {
		counts, err := c.Counts(ctx, shop, sli, []string{"v1", "v2"}, 10*time.Second)
		if err != nil {
			return err
		}
		if counts.Recorded != "" {
			return fmt.Errorf("counted from the recorded series: %s", counts.Recorded)
		}
		total, errs := counts.Total, counts.Errors
		near := func(got, want float64) bool { return got > want*0.8 && got < want*1.2 }
		if !near(total["v2"]["east"], 200) || !near(total["v2"]["west"], 200) || !near(errs["v2"]["east"], 100) || errs["v2"]["west"] != 0 {
			return fmt.Errorf("totals %v, errors %v; want about 200 in each cluster and 100 errors in east", total, errs)
		}
		if v1 := total["v1"]; len(v1) > 1 || v1["west"] != 0 {
			return fmt.Errorf("v1 counted %v, want nothing", v1)
		}
		return nil
	})

	// Of a fleet of west alone, east neither fires nor counts.
	westOnly := scope.App{Name: "shop", Namespace: inNamespace("shop"), Clusters: []string{"west"}}
	alerts, err := c.FiringAlertsIn(ctx, westOnly, "v2", false)
	if want := []prometheus.Alert{{Name: "HighLatency"}, {Name: "ZoneDown"}}; err != nil || !slices.Equal(alerts, want) {
		t.Errorf("FiringAlertsIn(west only) = %+v, %v; want %+v", alerts, err, want)
	}
	reached, err := c.ReachedIn(ctx, westOnly, "v2", []string{"shop:availability:total", "shop:availability:errors"})
	if want := map[string][]string{"shop:availability:total": {"west"}}; err != nil || fmt.Sprint(reached) != fmt.Sprint(want) {
		t.Errorf("ReachedIn(west only) = %v, %v; want %v", reached, err, want)
	}
}
