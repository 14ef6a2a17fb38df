package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// canaryRule waits until the canary PrometheusRule of app's build tag
// exists (want) or is gone (!want) on every target.
func canaryRule(t *testing.T, app, tag string, want bool) {
	t.Helper()
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, fmt.Sprintf("%s: canary rule of %s %s present=%v", target.Name, app, tag, want), func() error {
			pr := &monitoringv1.PrometheusRule{}
			err := target.Client.Get(context.Background(), client.ObjectKey{Namespace: app + "-production", Name: app + "-canary-" + tag}, pr)
			switch {
			case want && err != nil:
				return err
			case !want && err == nil:
				return fmt.Errorf("still there")
			case !want && !apierrors.IsNotFound(err):
				return err
			}
			return nil
		})
	}
}

// canaryTimeOver waits until app's build tag has run its canary (of length
// canary) and the operator has read its alerts four times since: a canary
// nothing held would have passed by then.
func canaryTimeOver(t *testing.T, app, tag string, canary time.Duration) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, tag+"'s canary time is over", func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		for _, s := range rm.Status.Revisions {
			if s.Tag == tag && s.CanaryStartTimestamp != nil {
				if over := s.CanaryStartTimestamp.Add(canary + 4*alertCheckInterval); time.Now().Before(over) {
					return fmt.Errorf("until %s", over.Format(time.RFC3339Nano))
				}
				return nil
			}
		}
		return fmt.Errorf("no canary start recorded")
	})
}

// alertsCondition waits until app's ReleaseManager has the AlertsObserved
// condition with status, and returns it.
func alertsCondition(t *testing.T, app string, status metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var out metav1.Condition
	kit.Eventually(t, 20*time.Second, fmt.Sprintf("%s AlertsObserved=%s", app, status), func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionAlertsObserved)
		if c == nil || c.Status != status {
			return fmt.Errorf("condition %+v", c)
		}
		out = *c
		return nil
	})
	return out
}

// TestSLO_CanaryAlertFailsAndRollsBackAHealthyCanaryIsReleased runs three
// builds of an app whose SLO reads Istio's request counters from a real
// Prometheus, which evaluates the rules Picchu wrote on the target:
//   - v1 is released;
//   - v2 canaries without errors: its canary alert rule exists only while
//     it canaries, nothing fires, and it is released while v1 retires;
//   - v3 canaries with half its requests failing: its canary alert fires in
//     Prometheus, Picchu records it, fails the Revision (annotations,
//     status, event), and v3's traffic goes back to v2 in both clusters
//     without anyone touching it.
func TestSLO_CanaryAlertFailsAndRollsBackAHealthyCanaryIsReleased(t *testing.T) {
	ctx := context.Background()
	const app = "checkout"
	traffic.Set(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})

	// v2 is healthy.
	traffic.Set(app, "v2", 5, 0)
	create(t, build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: 3 * time.Second})
	state(t, 30*time.Second, app, "v2", "canarying")
	canaryRule(t, app, "v2", true)
	alertsCondition(t, app, metav1.ConditionTrue)
	st := state(t, 60*time.Second, app, "v2", "released")
	if len(st.TriggeredAlerts) != 0 {
		t.Errorf("a healthy canary recorded alerts %v", st.TriggeredAlerts)
	}
	routes(t, app, map[string]int32{"v2": 100})
	state(t, 30*time.Second, app, "v1", "retired")
	canaryRule(t, app, "v2", false)

	// v3 fails half its requests.
	traffic.Set(app, "v1", 0, 0)
	traffic.Set(app, "v3", 5, 0.5)
	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: 300 * time.Millisecond, canary: 2 * time.Minute})
	state(t, 30*time.Second, app, "v3", "canarying")
	canarying := time.Now()
	canaryRule(t, app, "v3", true)
	kit.Eventually(t, 60*time.Second, "v3 failed by its canary alert", func() error {
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v3), v3); err != nil {
			return err
		}
		if !v3.Spec.Failed {
			msg := "not failed"
			if e, ok := ruleSyncLog.Load().(string); ok {
				msg += "; the rule sync last said: " + e
			}
			return fmt.Errorf("%s", msg)
		}
		return nil
	})
	if reason := v3.Annotations[picchuv1alpha1.AnnotationFailedReason]; !strings.Contains(reason, "availability_canary in production") {
		t.Errorf("failed-reason %q does not name the alert", reason)
	}
	if v3.Annotations[picchuv1alpha1.AnnotationFailedAt] == "" {
		t.Error("no failed-at annotation")
	}
	failedAt := time.Now()
	st = state(t, 30*time.Second, app, "v3", "failed")
	t.Logf("v3 failed %v after it started canarying, and its traffic was back on v2 %v later",
		failedAt.Sub(canarying).Round(10*time.Millisecond), time.Since(failedAt).Round(10*time.Millisecond))
	if !slices.Equal(st.TriggeredAlerts, []string{"availability_canary"}) {
		t.Errorf("release manager recorded alerts %v", st.TriggeredAlerts)
	}
	if st.PeakPercent > 10 {
		t.Errorf("v3 peaked at %d%%: a firing canary was promoted", st.PeakPercent)
	}
	routes(t, app, map[string]int32{"v2": 100})
	replicas(t, app, "v3", 0)
	kit.Eventually(t, 10*time.Second, "v3's alerts in its Revision status", func() error {
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v3), v3); err != nil {
			return err
		}
		for _, ts := range v3.Status.Targets {
			if ts.Name == "production" && slices.Equal(ts.TriggeredAlerts, []string{"availability_canary"}) {
				return nil
			}
		}
		return fmt.Errorf("targets %+v", v3.Status.Targets)
	})
	kit.Eventually(t, 10*time.Second, "a Failed event on v3", func() error {
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == v3.Name && e.Reason == "Failed" && e.Type == "Warning" && strings.Contains(e.Note, "availability_canary") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})
}

// TestSLO_PrometheusDownHoldsTheCanaryUntilItReturns stops Prometheus while
// a healthy build canaries: after the canary's time the build is still
// canarying at 10 % in both clusters and the ReleaseManager says why
// (AlertsObserved=False); missing data never fails it. When Prometheus is
// back, the canary passes and the build is released.
func TestSLO_PrometheusDownHoldsTheCanaryUntilItReturns(t *testing.T) {
	const app = "search"
	const canary = 2 * time.Second
	traffic.Set(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")

	traffic.Set(app, "v2", 5, 0)
	create(t, build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: canary})
	state(t, 30*time.Second, app, "v2", "canarying")
	if err := prom.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	defer func() {
		if !restarted {
			if err := prom.Start(context.Background()); err != nil {
				t.Errorf("starting Prometheus again: %v", err)
			}
		}
	}()
	cond := alertsCondition(t, app, metav1.ConditionFalse)
	if !strings.Contains(cond.Message, "Prometheus") {
		t.Errorf("condition message %q does not name Prometheus", cond.Message)
	}
	// Wait until the canary has run its time and the operator has read the
	// alerts several times since: an unheld canary would have passed.
	canaryTimeOver(t, app, "v2", canary)
	st := state(t, time.Second, app, "v2", "canarying")
	v2 := &picchuv1alpha1.Revision{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: app + "-v2"}, v2); err != nil {
		t.Fatal(err)
	}
	if v2.Spec.Failed {
		t.Error("missing data failed the build")
	}
	routes(t, app, map[string]int32{"v1": 90, "v2": 10})
	if len(st.TriggeredAlerts) != 0 {
		t.Errorf("missing data recorded alerts %v", st.TriggeredAlerts)
	}

	if err := prom.Start(context.Background()); err != nil {
		t.Fatalf("starting Prometheus again: %v", err)
	}
	restarted = true
	state(t, 60*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionAlertsObserved); c != nil && c.Status != metav1.ConditionTrue {
		t.Errorf("after Prometheus returned: %+v", c)
	}
}

// TestSLO_ACanaryNoRequestReachedHoldsUntilOneDoes: v2 canaries with no
// request reaching it (its SLO's recorded total has no series for its tag
// in the real Prometheus): past its canary time it is still canarying at
// 10 %, and CanaryEvidence=False says why. Once requests reach it, the
// canary passes and v2 is released.
func TestSLO_ACanaryNoRequestReachedHoldsUntilOneDoes(t *testing.T) {
	const app = "quiet"
	const canary = 2 * time.Second
	traffic.Set(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond})
	state(t, 30*time.Second, app, "v1", "released")

	create(t, build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: canary})
	state(t, 30*time.Second, app, "v2", "canarying")
	var held metav1.Condition
	kit.Eventually(t, 30*time.Second, "v2's canary held for want of requests", func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "NoTraffic" {
			return fmt.Errorf("CanaryEvidence %+v", c)
		}
		held = *c
		return nil
	})
	if !strings.Contains(held.Message, "v2") || !strings.Contains(held.Message, "quiet:availability:total") {
		t.Errorf("CanaryEvidence message %q names neither v2 nor its metric", held.Message)
	}
	// Several alert checks after its canary time, it still canaries.
	canaryTimeOver(t, app, "v2", canary)
	state(t, time.Second, app, "v2", "canarying")
	routes(t, app, map[string]int32{"v1": 90, "v2": 10})

	traffic.Set(app, "v2", 5, 0)
	state(t, 60*time.Second, app, "v2", "released")
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence); c != nil {
		t.Errorf("after requests reached it: %+v", c)
	}
}
