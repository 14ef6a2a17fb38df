package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// preflightOf sets the preflight of the Cluster of the first target.
func preflightOf(t *testing.T, p *picchuv1alpha1.ClusterPreflight) {
	t.Helper()
	ctx := context.Background()
	cl := &picchuv1alpha1.Cluster{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(env.Targets[0].Cluster), cl); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.Preflight = p
	if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
}

// clusterAlert is a PrometheusRule on the first target, which the test's
// Prometheus evaluates, whose alert fires at once, labelled with cluster.
func clusterAlert(name, cluster string) *monitoringv1.PrometheusRule {
	now := monitoringv1.Duration("0s")
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: strings.ToLower(name)},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "cluster", Rules: []monitoringv1.Rule{{
			Alert: name, Expr: intstr.FromString("vector(1)"), For: &now, Labels: map[string]string{"cluster": cluster},
		}}}}},
	}
}

// TestPreflight_ClusterAlertsHoldANewBuildUntilQuiet: the first target's
// Cluster names an alert that fires in the real Prometheus. v2 deploys but
// does not start its canary: v1 keeps all the traffic, and Preflight=False
// names the cluster and the alert. Once the alert is resolved, v2 canaries
// and is released.
func TestPreflight_ClusterAlertsHoldANewBuildUntilQuiet(t *testing.T) {
	ctx := context.Background()
	const app = "gantry"
	first := env.Targets[0]
	traffic.Set(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")

	rule := clusterAlert("NodesNotReady", first.Name)
	if err := first.Client.Create(ctx, rule); err != nil {
		t.Fatal(err)
	}
	resolved := false
	t.Cleanup(func() {
		if !resolved {
			if err := first.Client.Delete(ctx, rule); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		preflightOf(t, nil)
	})
	preflightOf(t, &picchuv1alpha1.ClusterPreflight{
		Alerts: []string{"NodesNotReady", "EtcdNoLeader"}, AlertLabels: map[string]string{"cluster": first.Name},
	})
	// The alert fires before v2 is applied: a build that found the
	// cluster quiet would rightly go on.
	kit.Eventually(t, 30*time.Second, "NodesNotReady firing", func() error {
		got, err := alerts.Series(ctx, `ALERTS{alertname="NodesNotReady",alertstate="firing"}`)
		if err != nil {
			return err
		}
		if len(got) == 0 {
			return fmt.Errorf("not firing yet (rule sync: %v)", ruleSyncLog.Load())
		}
		return nil
	})

	traffic.Set(app, "v2", 5, 0)
	create(t, build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: 2 * time.Second})
	var cond *metav1.Condition
	kit.Eventually(t, 30*time.Second, "v2 held by the cluster's alert", func() error {
		rm, err := releaseManager(ctx, app)
		if err != nil {
			return err
		}
		cond = meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionPreflight)
		if cond == nil {
			return fmt.Errorf("no Preflight condition yet")
		}
		return nil
	})
	want := fmt.Sprintf("v2 held on cluster %s: alerts: firing: NodesNotReady", first.Name)
	if cond.Status != metav1.ConditionFalse || cond.Reason != picchuv1alpha1.ReasonClusterAlertsFiring || cond.Message != want {
		t.Errorf("Preflight condition %+v, want False %s %q", cond, picchuv1alpha1.ReasonClusterAlertsFiring, want)
	}
	// Longer than its canary would take: v2 has not started it.
	state(t, 30*time.Second, app, "v2", "deployed")
	deadline := time.Now().Add(4 * time.Second)
	kit.Eventually(t, 10*time.Second, "v2 held past its canary time", func() error {
		st := state(t, time.Second, app, "v2", "deployed")
		if st.CurrentPercent != 0 {
			t.Fatalf("v2 takes %d %% while the cluster's alert fires", st.CurrentPercent)
		}
		if time.Now().Before(deadline) {
			return fmt.Errorf("holding")
		}
		return nil
	})
	routes(t, app, map[string]int32{"v1": 100})

	// Resolved: v2 goes on.
	if err := first.Client.Delete(ctx, rule); err != nil {
		t.Fatal(err)
	}
	resolved = true
	state(t, 90*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})
	rm, err := releaseManager(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionPreflight); c != nil {
		t.Errorf("Preflight condition %+v once the alert is resolved", c)
	}
}
