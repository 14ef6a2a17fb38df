package manifests_test

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// TestCheckTenancy: what a target writes that could reach another team's
// verdicts is refused, naming the field; what only judges the app's own
// builds passes, the legacy alertRules' slo, tag and canary labels among it.
func TestCheckTenancy(t *testing.T) {
	alert := func(expr string, labels map[string]string) picchuv1alpha1.RevisionTarget {
		return picchuv1alpha1.RevisionTarget{Name: "production", AlertRules: []monitoringv1.Rule{
			{Alert: "A", Expr: intstr.FromString(expr), Labels: labels},
		}}
	}
	endpoint := func(ep monitoringv1.Endpoint) picchuv1alpha1.RevisionTarget {
		return picchuv1alpha1.RevisionTarget{Name: "production", ServiceMonitors: []picchuv1alpha1.ServiceMonitor{
			{Name: "m", Spec: monitoringv1.ServiceMonitorSpec{Endpoints: []monitoringv1.Endpoint{ep}}},
		}}
	}
	slo := func(l picchuv1alpha1.ServiceLevelObjectiveLabels, alerting map[string]string) picchuv1alpha1.RevisionTarget {
		return picchuv1alpha1.RevisionTarget{Name: "production", ServiceLevelObjectives: []picchuv1alpha1.ServiceLevelObjective{{
			Name: "availability", ServiceLevelObjectiveLabels: l,
			Alerting: picchuv1alpha1.Alerting{Labels: alerting},
		}}}
	}
	dollar := "$1"
	for _, tc := range []struct {
		name   string
		target picchuv1alpha1.RevisionTarget
		want   string // a field path the error names; "" for none
	}{
		{"a legacy alert of the app's own build", alert(`rate(errors_total[5m]) > 1`, map[string]string{"app": "shop", "tag": "v7", "slo": "true", "severity": "page"}), ""},
		{"a label_replace writing another label", alert(`label_replace(up, "pod_name", "$1", "pod", "(.*)") == 0`, nil), ""},
		{"a recording rule", picchuv1alpha1.RevisionTarget{Name: "production", AlertRules: []monitoringv1.Rule{
			{Record: "shop:availability:total", Expr: intstr.FromString(`vector(1e6)`)},
		}}, "spec.targets[0].alertRules[0].record"},
		{"another app's label", alert(`vector(1)`, map[string]string{"app": "cart", "tag": "v7", "slo": "true"}), "spec.targets[0].alertRules[0].labels[app]"},
		{"a namespace label", alert(`vector(1)`, map[string]string{"namespace": "cart-production"}), "spec.targets[0].alertRules[0].labels[namespace]"},
		{"the cluster label", alert(`vector(1)`, map[string]string{"cluster": "west"}), "spec.targets[0].alertRules[0].labels[cluster]"},
		{"an expression writing namespace", alert(`label_replace(vector(1), "namespace", "cart-production", "", "")`, nil), "spec.targets[0].alertRules[0].expr"},
		{"an expression joining into the cluster label", alert(`label_join(up, "cluster", ",", "a", "b")`, nil), "spec.targets[0].alertRules[0].expr"},
		{"count_values into namespace", alert(`count_values("namespace", up)`, nil), "spec.targets[0].alertRules[0].expr"},
		{"an expression that does not parse", alert(`sum((`, nil), "spec.targets[0].alertRules[0].expr"},
		{"honorLabels", endpoint(monitoringv1.Endpoint{HonorLabels: true}), "spec.targets[0].serviceMonitors[0].spec.endpoints[0].honorLabels"},
		{"a relabeling into namespace", endpoint(monitoringv1.Endpoint{RelabelConfigs: []monitoringv1.RelabelConfig{{TargetLabel: "namespace"}}}),
			"spec.targets[0].serviceMonitors[0].spec.endpoints[0].relabelings[0].targetLabel"},
		{"a metric relabeling into a captured name", endpoint(monitoringv1.Endpoint{MetricRelabelConfigs: []monitoringv1.RelabelConfig{{TargetLabel: "${1}", Replacement: &dollar}}}),
			"spec.targets[0].serviceMonitors[0].spec.endpoints[0].metricRelabelings[0].targetLabel"},
		{"a relabeling into another label", endpoint(monitoringv1.Endpoint{RelabelConfigs: []monitoringv1.RelabelConfig{{TargetLabel: "pod"}}}), ""},
		{"alertLabels naming a namespace", slo(picchuv1alpha1.ServiceLevelObjectiveLabels{AlertLabels: map[string]string{"namespace": "x"}}, nil),
			"spec.targets[0].serviceLevelObjectives[0].serviceLevelObjectiveLabels.alertLabels[namespace]"},
		{"serviceLevelLabels naming another app", slo(picchuv1alpha1.ServiceLevelObjectiveLabels{ServiceLevelLabels: map[string]string{"app": "cart"}}, nil),
			"spec.targets[0].serviceLevelObjectives[0].serviceLevelObjectiveLabels.serviceLevelLabels[app]"},
		{"alerting labels naming the cluster", slo(picchuv1alpha1.ServiceLevelObjectiveLabels{}, map[string]string{"cluster": "west"}),
			"spec.targets[0].serviceLevelObjectives[0].alerting.labels[cluster]"},
		{"the SLO's own labels", slo(picchuv1alpha1.ServiceLevelObjectiveLabels{AlertLabels: map[string]string{"team": "checkout", "app": "shop"}}, map[string]string{"severity": "page"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := manifests.CheckTenancy("shop", "cluster", &tc.target, field.NewPath("spec", "targets").Index(0))
			if tc.want == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.want {
				t.Fatalf("errors %v, want one naming %s", errs, tc.want)
			}
		})
	}
}

// TestMonitoring_CheckRefusesWhatTheWebhookWould: the controller refuses,
// as one error naming the target, what the webhook refuses, for a Revision
// admitted before the check existed.
func TestMonitoring_CheckRefusesWhatTheWebhookWould(t *testing.T) {
	m := manifests.Monitoring{App: "shop", Target: "production", ClusterLabel: "cluster", AlertRules: []monitoringv1.Rule{
		{Alert: "A", Expr: intstr.FromString("vector(1)"), Labels: map[string]string{"app": "cart"}},
	}}
	err := m.Check()
	if err == nil || !strings.Contains(err.Error(), "spec.targets[production].alertRules[0].labels[app]") {
		t.Errorf("Check = %v, want an error naming spec.targets[production].alertRules[0].labels[app]", err)
	}
	m.AlertRules[0].Labels["app"] = "shop"
	if err := m.Check(); err != nil {
		t.Errorf("Check of the app's own alert = %v", err)
	}
}
