package releasemanager

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestClusterChanged: a Cluster's change runs its fleet's ReleaseManagers
// when a release reads it (spec, labels, Ready), never for the health
// check's latency or the breaker's last error alone.
func TestClusterChanged(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: picchuv1alpha1.ConditionReady, Status: status, Reason: reason, Message: msg}}
	}
	base := func() *picchuv1alpha1.Cluster {
		return &picchuv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "west", Generation: 1, Labels: map[string]string{picchuv1alpha1.LabelFleet: "production"}},
			Spec:       picchuv1alpha1.ClusterSpec{Enabled: true},
			Status: picchuv1alpha1.ClusterStatus{
				Conditions: ready(metav1.ConditionTrue, "Connected", "Kubernetes v1.36.3"),
				Health:     &picchuv1alpha1.ClusterHealthStatus{Breaker: "Closed", Latency: &metav1.Duration{Duration: 3 * time.Millisecond}},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*picchuv1alpha1.Cluster)
		want   bool
	}{
		{"nothing", func(*picchuv1alpha1.Cluster) {}, false},
		{"latency", func(c *picchuv1alpha1.Cluster) {
			c.Status.Health.Latency = &metav1.Duration{Duration: 900 * time.Millisecond}
		}, false},
		{"last error", func(c *picchuv1alpha1.Cluster) { c.Status.Health.LastError = "GET /version: EOF" }, false},
		{"spec", func(c *picchuv1alpha1.Cluster) { c.Generation = 2 }, true},
		{"labels", func(c *picchuv1alpha1.Cluster) { c.Labels["region"] = "west" }, true},
		{"not ready", func(c *picchuv1alpha1.Cluster) {
			c.Status.Conditions = ready(metav1.ConditionFalse, "CircuitOpen", "circuit breaker open")
		}, true},
		{"ready, another version", func(c *picchuv1alpha1.Cluster) {
			c.Status.Conditions = ready(metav1.ConditionTrue, "Connected", "Kubernetes v1.37.0")
		}, true},
		{"ready condition gone", func(c *picchuv1alpha1.Cluster) { c.Status.Conditions = nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := base(), base()
			tc.change(cur)
			if got := clusterChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cur}); got != tc.want {
				t.Errorf("clusterChanged = %v, want %v", got, tc.want)
			}
		})
	}
}
