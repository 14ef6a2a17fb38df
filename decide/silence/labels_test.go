package silence

import (
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// TestProtectedLabels_AreThoseOfPicchusAlerts: the labels release silences
// exclude are those plan/manifests puts on the canary alerts, and
// the canary alert names end as admission expects.
func TestProtectedLabels_AreThoseOfPicchusAlerts(t *testing.T) {
	if picchuv1alpha1.SilenceSLOLabel != manifests.AlertLabelSLO || picchuv1alpha1.SilenceCanaryLabel != manifests.AlertLabelCanary {
		t.Errorf("protected labels %s, %s; the canary alerts carry %s, %s",
			picchuv1alpha1.SilenceSLOLabel, picchuv1alpha1.SilenceCanaryLabel, manifests.AlertLabelSLO, manifests.AlertLabelCanary)
	}
	m := manifests.Monitoring{App: "shop", Target: "production", SLOs: []picchuv1alpha1.ServiceLevelObjective{{
		Name: "availability", Enabled: true, ObjectivePercentString: "99.9",
		ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
			TotalQuery: "sum(up)", ErrorQuery: "sum(up)", Canary: picchuv1alpha1.SLICanaryConfig{Enabled: true, AllowancePercent: 1},
		},
	}}}
	pr, err := manifests.CanaryRules(m, "v2")
	if err != nil || pr == nil {
		t.Fatalf("CanaryRules = %v, %v", pr, err)
	}
	target := picchuv1alpha1.RevisionTarget{ServiceLevelObjectives: m.SLOs}
	protected := target.ProtectedAlertNames()
	for _, rule := range pr.Spec.Groups[0].Rules {
		for _, label := range picchuv1alpha1.SilenceProtectedLabels {
			if rule.Labels[label] != picchuv1alpha1.SilenceProtectedValue {
				t.Errorf("canary alert %s: %s=%q, want %q", rule.Alert, label, rule.Labels[label], picchuv1alpha1.SilenceProtectedValue)
			}
		}
		found := false
		for _, name := range protected {
			found = found || name == rule.Alert
		}
		if !found {
			t.Errorf("canary alert %s is not among the protected names %q", rule.Alert, protected)
		}
	}
}
