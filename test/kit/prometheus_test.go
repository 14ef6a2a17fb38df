package kit_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
	"github.com/medium/picchu/test/kit"
)

// errorRatioRules record each destination version's error ratio over 30s,
// and alert (as an SLO alert of the app and tag) when it passes 20% for 1s.
func errorRatioRules() []monitoringv1.RuleGroup {
	forOneSecond := monitoringv1.Duration("1s")
	return []monitoringv1.RuleGroup{{
		Name: "demo-slo",
		Rules: []monitoringv1.Rule{
			{
				Record: "destination_version:istio_requests:error_ratio_30s",
				Expr: intstr.FromString(`
  sum by (destination_app, destination_version) (rate(istio_requests_total{reporter="destination",response_code=~"5.."}[30s]))
/
  sum by (destination_app, destination_version) (rate(istio_requests_total{reporter="destination"}[30s]))`),
			},
			{
				Alert: "DemoErrorRatioHigh",
				Expr:  intstr.FromString(`destination_version:istio_requests:error_ratio_30s > 0.2`),
				For:   &forOneSecond,
				Labels: map[string]string{
					"app":       "{{ $labels.destination_app }}",
					"tag":       "{{ $labels.destination_version }}",
					"slo":       "true",
					"namespace": "demo-production",
				},
			},
		},
	}}
}

func TestMarshalRules_PrometheusRuleFileFormat(t *testing.T) {
	forZero := monitoringv1.Duration("0s")
	out, err := kit.MarshalRules([]monitoringv1.RuleGroup{{
		Name: "g",
		Rules: []monitoringv1.Rule{
			{Alert: "A", Expr: intstr.FromString("vector(1)"), For: &forZero, Labels: map[string]string{"slo": "true"}},
			{Record: "r", Expr: intstr.FromString(`sum(x{a="b"})`)},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := `groups:
- name: g
  rules:
  - alert: A
    expr: vector(1)
    for: 0s
    labels:
      slo: "true"
  - expr: sum(x{a="b"})
    record: r
`
	if string(out) != want {
		t.Errorf("rule file:\n%s\nwant:\n%s", out, want)
	}
}

// TestPrometheus_AlertsOnTrafficAndRestarts runs a real Prometheus scraping
// simulated Istio traffic: a version failing half its requests fires the
// error ratio alert and a healthy one does not; a stopped Prometheus answers
// nothing, and started again it answers on the same address.
func TestPrometheus_AlertsOnTrafficAndRestarts(t *testing.T) {
	ctx := context.Background()
	traffic, err := kit.StartTraffic()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traffic.Close)
	traffic.Set("demo", "v1", 10, 0)
	traffic.Set("demo", "v2", 10, 0.5)

	prom, err := kit.StartPrometheus(ctx, kit.PrometheusConfig{ScrapeTargets: []string{traffic.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prom.Close(); err != nil {
			t.Errorf("closing Prometheus: %v", err)
		}
	})
	if err := prom.SetRules(ctx, errorRatioRules()); err != nil {
		t.Fatal(err)
	}

	// A short TTL, so that polling sees new results.
	client, err := prometheus.New(prometheus.Config{Address: prom.URL(), TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	demo := scope.App{Name: "demo", Namespace: "demo-production"}
	firing := func(tag string) ([]string, error) { return client.FiringAlerts(ctx, demo, tag, false) }
	expectFiring := func(tag string, want ...string) func() error {
		return func() error {
			got, err := firing(tag)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("demo %s: firing %q, want %q", tag, got, want)
			}
			return nil
		}
	}
	kit.Eventually(t, time.Minute, "the error ratio alert fires for v2", expectFiring("v2", "DemoErrorRatioHigh"))
	if err := expectFiring("v1")(); err != nil {
		t.Errorf("healthy version: %v", err)
	}

	if err := prom.Stop(); err != nil {
		t.Fatalf("stopping Prometheus: %v", err)
	}
	// A query the client has not cached, so that it reaches the stopped server.
	if got, err := client.FiringAlerts(ctx, demo, "v2", true); err == nil {
		t.Errorf("stopped Prometheus answered: %q", got)
	} else if !strings.Contains(err.Error(), prom.URL()) {
		t.Errorf("error %q does not name %s", err, prom.URL())
	}

	if err := prom.Start(ctx); err != nil {
		t.Fatalf("starting Prometheus again: %v", err)
	}
	kit.Eventually(t, time.Minute, "restarted Prometheus answers", func() error {
		got, err := client.FiringAlerts(ctx, demo, "v2", true)
		if err != nil {
			return err
		}
		if len(got) != 0 {
			return fmt.Errorf("canary alerts %q, want none", got)
		}
		return nil
	})
	kit.Eventually(t, time.Minute, "the error ratio alert fires again for v2", expectFiring("v2", "DemoErrorRatioHigh"))
}

func TestPrometheus_SetRulesReportsInvalidRules(t *testing.T) {
	ctx := context.Background()
	prom, err := kit.StartPrometheus(ctx, kit.PrometheusConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := prom.Close(); err != nil {
			t.Errorf("closing Prometheus: %v", err)
		}
	})
	bad := []monitoringv1.RuleGroup{{
		Name:  "bad",
		Rules: []monitoringv1.Rule{{Alert: "Broken", Expr: intstr.FromString("sum(")}},
	}}
	if err := prom.SetRules(ctx, bad); err == nil {
		t.Fatal("SetRules accepted an unparsable expression")
	} else if !strings.Contains(err.Error(), "reload") || !strings.Contains(err.Error(), "Broken") {
		t.Errorf("error %q does not say the reload failed, nor why", err)
	}
	// The good rules replace the bad ones.
	if err := prom.SetRules(ctx, errorRatioRules()); err != nil {
		t.Fatal(err)
	}
	if err := prom.SetRules(ctx, nil); err != nil {
		t.Fatalf("removing every rule: %v", err)
	}
}
