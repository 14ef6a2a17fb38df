package manifests_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/promql/parser"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// monitoring is a realistic app: an availability SLO read from Istio's
// metrics (the tag under destination_version) with a canary check, a
// latency SLO without one, a disabled SLO, two ServiceMonitors (one keeping
// only the SLOs' metrics) and a legacy alert rule.
func monitoring() manifests.Monitoring {
	return manifests.Monitoring{
		App: "shop", Target: "production", ClusterLabel: "cluster",
		Labels: picchuv1alpha1.ServiceLevelObjectiveLabels{
			AlertLabels:        map[string]string{"team": "checkout", "channel": "#checkout-alerts"},
			RuleLabels:         map[string]string{"prometheus": "main"},
			ServiceLevelLabels: map[string]string{"tier": "1"},
		},
		SLOs: []picchuv1alpha1.ServiceLevelObjective{
			{
				Name: "availability", Enabled: true, Description: "99.9% of requests succeed", ObjectivePercentString: "99.9",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
					TagKey:     "destination_version",
					TotalQuery: `sum by (destination_version) (istio_requests_total{destination_app="shop",reporter="destination"})`,
					ErrorQuery: `sum by (destination_version) (istio_requests_total{destination_app="shop",reporter="destination",response_code=~"5.."})`,
					Canary:     picchuv1alpha1.SLICanaryConfig{Enabled: true, AllowancePercentString: "0.5", FailAfter: "1.5m"},
				},
				ServiceLevelObjectiveLabels: picchuv1alpha1.ServiceLevelObjectiveLabels{
					AlertLabels: map[string]string{"severity": "page", "channel": "#shop-oncall"},
					RuleLabels:  map[string]string{"slo": "availability"},
				},
				Alerting: picchuv1alpha1.Alerting{
					Labels:      map[string]string{"slo": "true"},
					PageAlert:   &picchuv1alpha1.Alert{Labels: map[string]string{"severity": "page"}},
					TicketAlert: &picchuv1alpha1.Alert{Disable: true},
				},
			},
			{
				Name: "latency", Enabled: true, ObjectivePercentString: "99",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
					TotalQuery: `sum by (tag) (http_requests_total{app="shop"})`,
					ErrorQuery: `sum by (tag) (http_request_duration_seconds_bucket{app="shop",le="+Inf"}) - sum by (tag) (http_request_duration_seconds_bucket{app="shop",le="0.5"})`,
				},
				ServiceLevelObjectiveLabels: picchuv1alpha1.ServiceLevelObjectiveLabels{
					ServiceLevelLabels: map[string]string{"is_grpc": "false"},
				},
			},
			{
				Name: "legacy", Enabled: false, ObjectivePercentString: "90",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{TotalQuery: `unused_total`, ErrorQuery: `unused_errors`},
			},
		},
		ServiceMonitors: []picchuv1alpha1.ServiceMonitor{
			{
				Name: "shop-slis", SLORegex: true,
				Labels:      map[string]string{"prometheus": "main", picchuv1alpha1.LabelApp: "someone-else"},
				Annotations: map[string]string{"owner": "checkout"},
				Spec: monitoringv1.ServiceMonitorSpec{
					Selector: metav1.LabelSelector{MatchLabels: map[string]string{picchuv1alpha1.LabelApp: "shop"}},
					Endpoints: []monitoringv1.Endpoint{{
						Port: "status",
						MetricRelabelConfigs: []monitoringv1.RelabelConfig{
							{Action: "keep", SourceLabels: []monitoringv1.LabelName{"__name__"}},
							{Action: "drop", SourceLabels: []monitoringv1.LabelName{"__name__"}, Regex: "go_.*"},
						},
					}},
				},
			},
			{
				Name: "shop-all",
				Spec: monitoringv1.ServiceMonitorSpec{
					Selector:  metav1.LabelSelector{MatchLabels: map[string]string{picchuv1alpha1.LabelApp: "shop"}},
					Endpoints: []monitoringv1.Endpoint{{Port: "http"}},
				},
			},
		},
		AlertRules: []monitoringv1.Rule{{Alert: "ShopDown", Expr: intstr.FromString(`up{job="shop"} == 0`)}},
	}
}

func mustParse(t *testing.T, what, expr string) {
	t.Helper()
	if _, err := parser.ParseExpr(expr); err != nil {
		t.Errorf("%s is not valid PromQL: %v\n%s", what, err, expr)
	}
}

func TestSLORules_RecordTotalsAndErrorsUnderTheTagLabel(t *testing.T) {
	pr, err := manifests.SLORules(monitoring())
	if err != nil {
		t.Fatal(err)
	}
	if pr.Name != "shop-slo" || pr.Namespace != "shop-production" {
		t.Errorf("name %s/%s", pr.Namespace, pr.Name)
	}
	wantLabels := map[string]string{
		"prometheus": "main", "slo": "availability", manifests.LabelRuleType: manifests.RuleTypeSLO,
		picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production",
	}
	if !reflect.DeepEqual(pr.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", pr.Labels, wantLabels)
	}
	if len(pr.Spec.Groups) != 2 || pr.Spec.Groups[0].Name != "availability_record" || pr.Spec.Groups[1].Name != "latency_record" {
		t.Fatalf("groups %+v (the disabled SLO must have none)", pr.Spec.Groups)
	}
	avail := pr.Spec.Groups[0].Rules
	if avail[0].Record != "shop:availability:total" || avail[1].Record != "shop:availability:errors" {
		t.Errorf("records %s, %s", avail[0].Record, avail[1].Record)
	}
	wantTotal := `label_replace(sum by (destination_version) (istio_requests_total{destination_app="shop",reporter="destination"}), "tag", "$1", "destination_version", "(.*)")`
	if avail[0].Expr.StrVal != wantTotal {
		t.Errorf("total expr\n got %s\nwant %s", avail[0].Expr.StrVal, wantTotal)
	}
	// The latency SLO's queries already carry "tag": recorded as written.
	if got := pr.Spec.Groups[1].Rules[0].Expr.StrVal; got != `sum by (tag) (http_requests_total{app="shop"})` {
		t.Errorf("latency total %s", got)
	}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			mustParse(t, r.Record, r.Expr.StrVal)
		}
	}

	// A name that is not a metric name is made one.
	if got := manifests.SLOMetric("shop-api", "p99.latency", "total"); got != "shop_api:p99_latency:total" {
		t.Errorf("SLOMetric %s", got)
	}
	none := monitoring()
	none.SLOs = none.SLOs[2:]
	if pr, err := manifests.SLORules(none); pr != nil || err != nil {
		t.Errorf("only a disabled SLO: %v, %v", pr, err)
	}
	broken := monitoring()
	broken.SLOs[1].ServiceLevelIndicator.ErrorQuery = ""
	if _, err := manifests.SLORules(broken); err == nil || !strings.Contains(err.Error(), "serviceLevelObjectives[latency].serviceLevelIndicator") {
		t.Errorf("an enabled SLO without errorQuery: %v", err)
	}
}

func TestCanaryRules_CompareTheBuildWithTheAppAndKeepTheUsersLabels(t *testing.T) {
	pr, err := manifests.CanaryRules(monitoring(), "v2")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Name != "shop-canary-v2" || pr.Labels[manifests.LabelRuleType] != manifests.RuleTypeCanary || pr.Labels[picchuv1alpha1.LabelTag] != "v2" ||
		pr.Labels["prometheus"] != "main" {
		t.Errorf("metadata %s %v", pr.Name, pr.Labels)
	}
	if len(pr.Spec.Groups) != 1 || len(pr.Spec.Groups[0].Rules) != 1 {
		t.Fatalf("groups %+v: only the availability SLO checks canaries", pr.Spec.Groups)
	}
	rule := pr.Spec.Groups[0].Rules[0]
	// The build and the app are both read in the app's namespace alone: a
	// same-named app of another team does not move the comparison.
	want := `(sum by (tag) (rate(shop:availability:errors{namespace="shop-production",tag="v2"}[2m])) / sum by (tag) (rate(shop:availability:total{namespace="shop-production",tag="v2"}[2m]))) - 0.005 > ignoring(tag) (sum(rate(shop:availability:errors{namespace="shop-production"}[2m])) / sum(rate(shop:availability:total{namespace="shop-production"}[2m])))`
	if rule.Alert != "availability_canary" || rule.Expr.StrVal != want {
		t.Errorf("alert %s expr\n got %s\nwant %s", rule.Alert, rule.Expr.StrVal, want)
	}
	mustParse(t, rule.Alert, rule.Expr.StrVal)
	if rule.For == nil || *rule.For != "1m30s" {
		t.Errorf("for %v, want 1m30s from failAfter 1.5m", rule.For)
	}
	// The user's channel stays (the original forced #eng-releases); the
	// SLO's labels win over the target's; Picchu sets what it reads back.
	wantLabels := map[string]string{
		"team": "checkout", "channel": "#shop-oncall", "severity": "page",
		"app": "shop", "tag": "v2", "canary": "true", "slo": "true", "namespace": "shop-production",
	}
	if !reflect.DeepEqual(rule.Labels, wantLabels) {
		t.Errorf("alert labels %v, want %v", rule.Labels, wantLabels)
	}
	if rule.Annotations["message"] != "99.9% of requests succeed" {
		t.Errorf("annotations %v", rule.Annotations)
	}

	// allowancePercent works when the string is unset; a bad failAfter is named.
	m := monitoring()
	m.SLOs[0].ServiceLevelIndicator.Canary = picchuv1alpha1.SLICanaryConfig{Enabled: true, AllowancePercent: 2}
	if expr, _ := manifests.CanaryExpr("shop", "shop-production", m.SLOs[0], "v3"); !strings.Contains(expr, ` - 0.02 > `) {
		t.Errorf("allowancePercent 2: %s", expr)
	}
	m.SLOs[0].ServiceLevelIndicator.Canary.FailAfter = "soon"
	if _, err := manifests.CanaryRules(m, "v3"); err == nil || !strings.Contains(err.Error(), "canary.failAfter") {
		t.Errorf("bad failAfter: %v", err)
	}
	m.SLOs[0].ServiceLevelIndicator.Canary.Enabled = false
	if pr, err := manifests.CanaryRules(m, "v3"); pr != nil || err != nil {
		t.Errorf("no canary check: %v, %v", pr, err)
	}
}

func TestServiceLevels_OnePerAppAndTargetWithBurnAlertsByTag(t *testing.T) {
	psl, err := manifests.ServiceLevels(monitoring(), "service-level-objectives")
	if err != nil {
		t.Fatal(err)
	}
	if psl.Name != "shop-production-servicelevels" || psl.Namespace != "service-level-objectives" || psl.Spec.Service != "shop" {
		t.Errorf("metadata %s/%s service %s", psl.Namespace, psl.Name, psl.Spec.Service)
	}
	if len(psl.Spec.SLOs) != 2 {
		t.Fatalf("slos %+v", psl.Spec.SLOs)
	}
	avail, latency := psl.Spec.SLOs[0], psl.Spec.SLOs[1]
	if avail.Objective != 99.9 || avail.Labels["tier"] != "1" || avail.Labels["app"] != "shop" {
		t.Errorf("availability %+v", avail)
	}
	if got := avail.SLI.Events.ErrorQuery; got != `sum by (tag) (rate(shop:availability:errors{namespace="shop-production"}[{{.window}}]))` {
		t.Errorf("error events %s", got)
	}
	if got := latency.SLI.Events.TotalQuery; got != `sum by (tag, grpc_method) (rate(shop:latency:total{namespace="shop-production"}[{{.window}}]))` {
		t.Errorf("gRPC total events %s", got)
	}
	for _, q := range []string{avail.SLI.Events.ErrorQuery, avail.SLI.Events.TotalQuery, latency.SLI.Events.TotalQuery} {
		mustParse(t, "events", strings.ReplaceAll(q, "{{.window}}", "5m"))
	}
	if avail.Alerting.Name != "availability" || avail.Alerting.Labels["slo"] != "true" ||
		avail.Alerting.PageAlert.Labels["severity"] != "page" || !avail.Alerting.TicketAlert.Disable {
		t.Errorf("alerting %+v", avail.Alerting)
	}
	bad := monitoring()
	bad.SLOs[1].ObjectivePercentString = ""
	if _, err := manifests.ServiceLevels(bad, "slos"); err == nil || !strings.Contains(err.Error(), "serviceLevelObjectives[latency].objectivePercentString") {
		t.Errorf("missing objective: %v", err)
	}
}

func TestServiceMonitors_SelectTheAppsNamespaceAndKeepOnlySLOMetrics(t *testing.T) {
	m := monitoring()
	before := m.ServiceMonitors[0].DeepCopy()
	sms, err := manifests.ServiceMonitors(m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, &m.ServiceMonitors[0]) {
		t.Error("ServiceMonitors modified its input")
	}
	if len(sms) != 2 {
		t.Fatalf("%d monitors", len(sms))
	}
	slis := sms[0]
	if slis.Name != "shop-slis" || slis.Labels["prometheus"] != "main" || slis.Labels[picchuv1alpha1.LabelApp] != "shop" ||
		slis.Labels[picchuv1alpha1.LabelTarget] != "production" || slis.Annotations["owner"] != "checkout" {
		t.Errorf("metadata %v %v (Picchu's app label must win: it finds its monitors by it)", slis.Labels, slis.Annotations)
	}
	if !reflect.DeepEqual(slis.Spec.NamespaceSelector.MatchNames, []string{"shop-production"}) {
		t.Errorf("namespace selector %+v", slis.Spec.NamespaceSelector)
	}
	relabel := slis.Spec.Endpoints[0].MetricRelabelConfigs
	if relabel[0].Regex != "http_request_duration_seconds_bucket|http_requests_total|istio_requests_total" || relabel[1].Regex != "go_.*" {
		t.Errorf("relabel regexes %q, %q: the SLO metrics fill only the empty one", relabel[0].Regex, relabel[1].Regex)
	}
	// Every endpoint ends by setting its namespace to the app's and
	// dropping any cluster label: whatever came before, the series it
	// scrapes are the app's, in the cluster that scrapes them.
	for _, sm := range sms {
		for _, ep := range sm.Spec.Endpoints {
			if got := ep.MetricRelabelConfigs[len(ep.MetricRelabelConfigs)-1]; got.Action != "replace" || got.TargetLabel != "namespace" || *got.Replacement != "shop-production" {
				t.Errorf("%s: last metric relabelling %+v, want namespace set to shop-production", sm.Name, got)
			}
			n := len(ep.RelabelConfigs)
			if n < 2 || ep.RelabelConfigs[n-2].TargetLabel != "namespace" || *ep.RelabelConfigs[n-2].Replacement != "shop-production" ||
				ep.RelabelConfigs[n-1].Action != "labeldrop" || ep.RelabelConfigs[n-1].Regex != "cluster" {
				t.Errorf("%s: relabellings %+v, want namespace set then the cluster label dropped", sm.Name, ep.RelabelConfigs)
			}
		}
	}
	if got := sms[1].Spec.Endpoints[0].MetricRelabelConfigs; len(got) != 1 {
		t.Errorf("a monitor without sloRegex got relabelling %+v, want the namespace alone", got)
	}
	bad := monitoring()
	bad.SLOs[0].ServiceLevelIndicator.TotalQuery = "sum(("
	if _, err := manifests.ServiceMonitors(bad); err == nil || !strings.Contains(err.Error(), "serviceMonitors[shop-slis].sloRegex: serviceLevelObjectives[availability].serviceLevelIndicator.totalQuery") {
		t.Errorf("unparsable SLO query: %v", err)
	}
}

// TestMonitoringPlans_TheTargetAcceptsThem applies every monitoring object
// to a target API server that has the real prometheus-operator and Sloth
// CRDs, and reads them back.
func TestMonitoringPlans_TheTargetAcceptsThem(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	m := monitoring()
	slo, err := manifests.SLORules(m)
	if err != nil {
		t.Fatal(err)
	}
	canary, err := manifests.CanaryRules(m, "v2")
	if err != nil {
		t.Fatal(err)
	}
	psl, err := manifests.ServiceLevels(m, "service-level-objectives")
	if err != nil {
		t.Fatal(err)
	}
	sms, err := manifests.ServiceMonitors(m)
	if err != nil {
		t.Fatal(err)
	}
	objects := []client.Object{
		manifests.AppNamespace("shop", "production", manifests.MeshSidecar),
		slo, canary, manifests.AlertRules(m), psl, sms[0], sms[1],
	}
	// The service levels' namespace is shared by every app: created, not applied.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "service-level-objectives"}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objects {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T %s: %v", obj, obj.GetName(), err)
		}
	}
	gotRule := &monitoringv1.PrometheusRule{}
	if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(canary), gotRule); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotRule.Spec, canary.Spec) {
		t.Errorf("stored canary rule differs:\n got %+v\nwant %+v", gotRule.Spec, canary.Spec)
	}
	gotPSL := &slothv1.PrometheusServiceLevel{}
	if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(psl), gotPSL); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotPSL.Spec, psl.Spec) {
		t.Errorf("stored service levels differ:\n got %+v\nwant %+v", gotPSL.Spec, psl.Spec)
	}
	gotSM := &monitoringv1.ServiceMonitor{}
	if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(sms[0]), gotSM); err != nil {
		t.Fatal(err)
	}
	if gotSM.Spec.Endpoints[0].MetricRelabelConfigs[0].Regex != sms[0].Spec.Endpoints[0].MetricRelabelConfigs[0].Regex {
		t.Errorf("stored monitor relabelling %+v", gotSM.Spec.Endpoints[0].MetricRelabelConfigs)
	}

	// The CRD schema is what rejects a bad object: a PrometheusRule whose
	// "for" is not a Prometheus duration never reaches Prometheus.
	bad := canary.DeepCopy()
	bad.Name = "bad"
	notADuration := monitoringv1.Duration("1.5m")
	bad.Spec.Groups[0].Rules[0].For = &notADuration
	if err := c.Apply(ctx, bad); err == nil {
		t.Error("the target accepted a rule whose for is 1.5m; promDuration exists because it must not")
	}
}
