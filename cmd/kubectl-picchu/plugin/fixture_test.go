package plugin_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// newNamespace creates a namespace of the test's own, named after it.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-")
	name = strings.Trim(name[:min(len(name), 60)], "-")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// ago is the timestamp d before the test clock.
func ago(d time.Duration) *picchuv1alpha1.Timestamp {
	ts := picchuv1alpha1.NewTimestamp(now.Add(-d))
	return &ts
}

// createDemo creates, in ns, app "demo" in the middle of a release, and app
// "other" beside it:
//
//   - v1 released long ago, now giving its traffic to v2; a rollback to it
//     written a year ahead was ignored in production;
//   - v2 ramping: 40 % in production (next step to 80 % in 6m), released
//     at 90 % in staging;
//   - v3 failed by its canary alert, once retried;
//   - v4 the newest: deploying in production, canarying in staging, paused.
func createDemo(t *testing.T, ns string) {
	t.Helper()
	for _, tag := range []string{"v1", "v2", "v3", "v4"} {
		rev := revision(ns, "demo", tag)
		switch tag {
		case "v3":
			rev.Spec.Failed = true
			rev.Annotations = map[string]string{
				picchuv1alpha1.AnnotationFailedReason: "canary alert availability_canary fired in production",
				picchuv1alpha1.AnnotationFailedAt:     now.Add(-time.Minute).Format(time.RFC3339),
			}
		case "v4":
			rev.Annotations = map[string]string{picchuv1alpha1.AnnotationPause: now.Add(-time.Minute).Format(time.RFC3339)}
		}
		create(t, rev)
	}
	create(t, revision(ns, "other", "v1"))

	production := manager(ns, "demo", "production")
	production.Status = picchuv1alpha1.ReleaseManagerStatus{
		Releasing: &picchuv1alpha1.ReleasingStatus{Tag: "v2", Percent: 40, ForecastFinish: &metav1.Time{Time: now.Add(4 * time.Minute)}},
		Conditions: []metav1.Condition{
			condition(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, "Releasing", "v2 ramps to 80% at its next step"),
			condition(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, "Releasing", "v2 takes 40% of the traffic"),
		},
		Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{
			{
				Tag:                     "v4",
				State:                   state("deploying", 2*time.Minute),
				Scale:                   picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 1, Desired: 2},
				DeployingStartTimestamp: ago(2 * time.Minute),
				Paused:                  ago(time.Minute),
			},
			{
				Tag:             "v3",
				State:           state("failed", time.Minute),
				PeakPercent:     10,
				TriggeredAlerts: []string{"availability_canary"},
				TriggeredWhere:  "cluster west",
				Verdict:         "v3 fails availability: 2.3 % errors (412 of 17 880) against v2's 0.9 % (161 of 17 790) in 2 clusters, one-sided p < 0.001",
				Clusters: []picchuv1alpha1.ReleaseManagerRevisionClusterStatus{
					{Name: "east", LastUpdated: ago(time.Minute)},
					{Name: "west", LastUpdated: ago(time.Minute), TriggeredAlerts: []string{"availability_canary"}, Verdict: "outlier: 6.1 % errors (110 of 1800) against 0.9 % in the other clusters"},
				},
				DeployingStartTimestamp: ago(12 * time.Minute),
				CanaryStartTimestamp:    ago(10 * time.Minute),
				Retries: []picchuv1alpha1.ReleaseManagerRetryStatus{
					{Time: *ago(6 * time.Minute), State: "failed", PeakPercent: 10},
				},
			},
			{
				Tag:                          "v2",
				State:                        state("releasing", 12*time.Minute),
				CurrentPercent:               40,
				PeakPercent:                  40,
				ReleaseEligible:              true,
				LastUpdated:                  ago(4 * time.Minute),
				Clusters:                     clusters(40, 4*time.Minute, "east", "west"),
				Scale:                        picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 4, Desired: 4},
				DeployingStartTimestamp:      ago(30 * time.Minute),
				CanaryStartTimestamp:         ago(25 * time.Minute),
				PendingReleaseStartTimestamp: ago(15 * time.Minute),
				ReleaseStartTimestamp:        ago(12 * time.Minute),
			},
			{
				Tag:   "v1",
				State: state("released", 3*time.Hour),
				IgnoredRollback: &picchuv1alpha1.ReleaseManagerIgnoredRequest{
					Request: "2027-11-25T10:00:00Z", Time: *ago(20 * time.Minute),
					Reason: "its time, 2027-11-25T10:00:00Z (written by the client's clock), is 8760h0m0s ahead of Picchu's clock: it would hold back every build created until then",
				},
				CurrentPercent:        60,
				PeakPercent:           100,
				ReleaseEligible:       true,
				LastUpdated:           ago(4 * time.Minute),
				Clusters:              clusters(60, 4*time.Minute, "east", "west"),
				Scale:                 picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 6, Desired: 6},
				ReleaseStartTimestamp: ago(3*time.Hour + 30*time.Minute),
			},
		},
	}
	createWithStatus(t, production)

	staging := manager(ns, "demo", "staging")
	staging.Status = picchuv1alpha1.ReleaseManagerStatus{
		Releasing: &picchuv1alpha1.ReleasingStatus{Tag: "v2", Percent: 90},
		Conditions: []metav1.Condition{
			condition(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, "Paused", "v4 is paused: its canary holds at 10%"),
		},
		Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{
			{
				Tag:                     "v4",
				State:                   state("canarying", 3*time.Minute),
				CurrentPercent:          10,
				PeakPercent:             10,
				ReleaseEligible:         true,
				LastUpdated:             ago(3 * time.Minute),
				Clusters:                clusters(10, 3*time.Minute, "staging-1"),
				Scale:                   picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 1, Desired: 1},
				DeployingStartTimestamp: ago(5 * time.Minute),
				CanaryStartTimestamp:    ago(3 * time.Minute),
				Paused:                  ago(time.Minute),
			},
			{Tag: "v3", State: state("failed", 20*time.Minute), PeakPercent: 10},
			{
				Tag:             "v2",
				State:           state("released", 40*time.Minute),
				CurrentPercent:  90,
				PeakPercent:     100,
				ReleaseEligible: true,
				LastUpdated:     ago(3 * time.Minute),
				Clusters:        clusters(90, 3*time.Minute, "staging-1"),
				Scale:           picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 2, Desired: 2},
			},
			{Tag: "v1", State: state("retired", 40*time.Minute), PeakPercent: 100},
		},
	}
	createWithStatus(t, staging)

	other := manager(ns, "other", "production")
	other.Status = picchuv1alpha1.ReleaseManagerStatus{
		Releasing: &picchuv1alpha1.ReleasingStatus{Tag: "v1", Percent: 100},
		Conditions: []metav1.Condition{
			condition(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, "Released", "v1 takes all the traffic"),
		},
		Revisions: []picchuv1alpha1.ReleaseManagerRevisionStatus{
			{Tag: "v1", State: state("released", time.Hour), CurrentPercent: 100, PeakPercent: 100, ReleaseEligible: true},
		},
	}
	createWithStatus(t, other)

	event(t, ns, "Revision", "demo-v3", corev1.EventTypeWarning, "Failed",
		"canary alert availability_canary fired in production; its traffic goes back to the previous release in every cluster", time.Minute, 1)
	event(t, ns, "ReleaseManager", "demo-production", corev1.EventTypeNormal, "Stepped", "v2 takes 40% in every cluster", 4*time.Minute, 3)
	event(t, ns, "Revision", "demo-v2", corev1.EventTypeNormal, "Canaried", "v2 passed its canary", 15*time.Minute, 1)
	event(t, ns, "Revision", "other-v1", corev1.EventTypeNormal, "Released", "not an event of demo", 2*time.Minute, 1)
}

// revision is build tag of app in ns, with targets production and staging
// in fleets of their names, ramping geometrically every 10 minutes.
func revision(ns, app, tag string) *picchuv1alpha1.Revision {
	target := func(name string) picchuv1alpha1.RevisionTarget {
		return picchuv1alpha1.RevisionTarget{
			Name:  name,
			Fleet: name,
			Release: picchuv1alpha1.ReleaseInfo{
				Eligible:         true,
				Max:              100,
				ScalingStrategy:  picchuv1alpha1.ScalingStrategyGeometric,
				GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Minute}},
			},
		}
	}
	return kit.Apps{Namespace: ns}.Revision(app, tag, kit.Targets(target("production"), target("staging")))
}

func manager(ns, app, target string) *picchuv1alpha1.ReleaseManager {
	return &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{
			Name: app + "-" + target, Namespace: ns,
			Labels: map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: target},
		},
		Spec: picchuv1alpha1.ReleaseManagerSpec{Fleet: target, App: app, Target: target},
	}
}

func state(current string, since time.Duration) picchuv1alpha1.ReleaseManagerRevisionStateStatus {
	return picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: current, Target: current, LastUpdated: ago(since)}
}

func clusters(percent int32, since time.Duration, names ...string) []picchuv1alpha1.ReleaseManagerRevisionClusterStatus {
	var out []picchuv1alpha1.ReleaseManagerRevisionClusterStatus
	for _, name := range names {
		out = append(out, picchuv1alpha1.ReleaseManagerRevisionClusterStatus{Name: name, Percent: percent, LastUpdated: ago(since)})
	}
	return out
}

func condition(kind string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: kind, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Minute))}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createWithStatus creates rm, then writes its status.
func createWithStatus(t *testing.T, rm *picchuv1alpha1.ReleaseManager) {
	t.Helper()
	status := rm.Status
	create(t, rm)
	rm.Status = status
	if err := k8s.Status().Update(context.Background(), rm); err != nil {
		t.Fatalf("writing the status of release manager %s: %v", rm.Name, err)
	}
}

// event records an Event about the object kind/name of ns, seen count
// times: last before the test clock, first count times that before it.
func event(t *testing.T, ns, kind, name, kindOf, reason, message string, before time.Duration, count int32) {
	t.Helper()
	var obj client.Object = &picchuv1alpha1.Revision{}
	if kind == "ReleaseManager" {
		obj = &picchuv1alpha1.ReleaseManager{}
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatalf("reading %s %s: %v", kind, name, err)
	}
	create(t, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "." + strings.ToLower(reason)},
		InvolvedObject: corev1.ObjectReference{
			Kind: kind, APIVersion: picchuv1alpha1.GroupVersion.String(),
			Namespace: ns, Name: name, UID: obj.GetUID(),
		},
		Type: kindOf, Reason: reason, Message: message, Count: count,
		FirstTimestamp: metav1.NewTime(now.Add(-before * time.Duration(count))),
		LastTimestamp:  metav1.NewTime(now.Add(-before)),
		Source:         corev1.EventSource{Component: "picchu"},
	})
}
