package revision_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/revision"
)

// TestFailReason_AlertsFailOnlyUnprovenBuilds covers the Revision
// controller's rule with --slo-proven-percent=50, the original's: a
// timeout always fails; firing alerts fail a build that has not peaked at
// 50 % in its proving target, unless ignoreSLOs.
func TestFailReason_AlertsFailOnlyUnprovenBuilds(t *testing.T) {
	rm := func(target, state string, peak int32, alerts ...string) *picchuv1alpha1.ReleaseManager {
		out := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: target}}
		st := picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: "v2", PeakPercent: peak, TriggeredAlerts: alerts}
		st.State.Current = state
		out.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{st}
		return out
	}
	rev := func(ignore bool, targets ...picchuv1alpha1.RevisionTarget) *picchuv1alpha1.Revision {
		return &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{
			App: picchuv1alpha1.RevisionApp{Name: "shop", Tag: "v2"}, IgnoreSLOs: ignore, Targets: targets,
		}}
	}
	staging, production := picchuv1alpha1.RevisionTarget{Name: "staging"}, picchuv1alpha1.RevisionTarget{Name: "production"}
	qa := picchuv1alpha1.RevisionTarget{Name: "qa", AcceptanceTarget: true}
	for _, tc := range []struct {
		name   string
		rev    *picchuv1alpha1.Revision
		rms    []*picchuv1alpha1.ReleaseManager
		reason string
	}{
		{"nothing wrong", rev(false, production), []*picchuv1alpha1.ReleaseManager{rm("production", "releasing", 20)}, ""},
		{"timed out", rev(true, production), []*picchuv1alpha1.ReleaseManager{rm("production", "timingout", 0)}, "timed out in production"},
		{"canary alert before proving", rev(false, production), []*picchuv1alpha1.ReleaseManager{rm("production", "canarying", 10, "availability_canary")},
			"SLO alerts firing: availability_canary in production"},
		{"ignoreSLOs", rev(true, production), []*picchuv1alpha1.ReleaseManager{rm("production", "canarying", 10, "availability_canary")}, ""},
		{"proven in production", rev(false, production), []*picchuv1alpha1.ReleaseManager{rm("production", "releasing", 50, "latency")}, ""},
		{"alert in staging while production has not proven it", rev(false, staging, production), []*picchuv1alpha1.ReleaseManager{
			rm("staging", "released", 100, "availability"), rm("production", "canarying", 10)},
			"SLO alerts firing: availability in staging"},
		{"an acceptance target proves it first", rev(false, qa, production), []*picchuv1alpha1.ReleaseManager{
			rm("qa", "released", 100), rm("production", "canarying", 10, "availability_canary")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, ok := revision.FailReason(tc.rev, tc.rms, 50, time.Now())
			if reason != tc.reason || ok != (tc.reason != "") {
				t.Errorf("FailReason = %q, %v; want %q", reason, ok, tc.reason)
			}
		})
	}
}

func TestFailReason_RejectedBuildsFailUntilProven(t *testing.T) {
	rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{
		App:     picchuv1alpha1.RevisionApp{Name: "shop", Tag: "v2"},
		Targets: []picchuv1alpha1.RevisionTarget{{Name: "production"}},
	}}
	rm := func(peak int32, rejected string) []*picchuv1alpha1.ReleaseManager {
		out := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"}}
		out.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{Tag: "v2", PeakPercent: peak, Rejected: rejected}}
		return []*picchuv1alpha1.ReleaseManager{out}
	}
	const why = `east: ReplicaSet.apps "v2" is invalid`
	if reason, ok := revision.FailReason(rev, rm(0, why), 50, time.Now()); !ok || !strings.Contains(reason, "rejected in production by cluster "+why) {
		t.Errorf("rejected before any traffic: %q %v, want it failed with the reason", reason, ok)
	}
	if reason, ok := revision.FailReason(rev, rm(60, why), 50, time.Now()); ok {
		t.Errorf("rejected once proven: failed (%q), want it held", reason)
	}
	if reason, ok := revision.FailReason(rev, rm(0, ""), 50, time.Now()); ok {
		t.Errorf("nothing rejected: failed (%q)", reason)
	}
}

// TestFailReason_JudgedUntilReleasedByDefault: without --slo-proven-percent
// (0), alerts a ReleaseManager recorded (it records them only while it
// judges the build) fail it at any peak; a build a cluster comes to refuse
// is held only once released in its proving target and watched.
func TestFailReason_JudgedUntilReleasedByDefault(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{
		App:     picchuv1alpha1.RevisionApp{Name: "shop", Tag: "v2"},
		Targets: []picchuv1alpha1.RevisionTarget{{Name: "production", Release: picchuv1alpha1.ReleaseInfo{Watch: &metav1.Duration{Duration: time.Minute}}}},
	}}
	rm := func(state string, since time.Time, peak int32, rejected string, alerts ...string) []*picchuv1alpha1.ReleaseManager {
		out := &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"}}
		st := picchuv1alpha1.ReleaseManagerRevisionStatus{Tag: "v2", PeakPercent: peak, Rejected: rejected, TriggeredAlerts: alerts}
		stamp := picchuv1alpha1.NewTimestamp(since)
		st.State.Current, st.State.LastUpdated = state, &stamp
		out.Status.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{st}
		return []*picchuv1alpha1.ReleaseManager{out}
	}
	const why = `east: ReplicaSet.apps "v2" is invalid`
	for _, tc := range []struct {
		name string
		rms  []*picchuv1alpha1.ReleaseManager
		fail bool
	}{
		{"an alert at 80 %", rm("releasing", now, 80, "", "availability"), true},
		{"an alert recorded at 100 %, before it was released", rm("releasing", now, 100, "", "availability"), true},
		{"rejected while releasing at 80 %", rm("releasing", now, 80, why), true},
		{"rejected while released and watched", rm("released", now.Add(-30*time.Second), 100, why), true},
		{"rejected once released and watched", rm("released", now.Add(-2*time.Minute), 100, why), false},
	} {
		if _, ok := revision.FailReason(rev, tc.rms, 0, now); ok != tc.fail {
			t.Errorf("%s: failed %v, want %v", tc.name, ok, tc.fail)
		}
	}
}
