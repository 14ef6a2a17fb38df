package revision_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/revision"
	"github.com/medium/picchu/decide/release"
)

// outcome is what a Revision's conditions say, as kstatus reads them.
type outcome struct {
	ready  metav1.ConditionStatus
	reason string
	// progressing: Reconciling True; stalled: Stalled True (else absent).
	progressing, stalled bool
}

var (
	progressing = outcome{metav1.ConditionFalse, picchuv1alpha1.ReasonProgressing, true, false}
	released    = outcome{metav1.ConditionTrue, picchuv1alpha1.ReasonReleased, false, false}
	settled     = outcome{metav1.ConditionTrue, picchuv1alpha1.ReasonSettled, false, false}
	failed      = outcome{metav1.ConditionFalse, picchuv1alpha1.ReasonFailed, false, true}
	timedOut    = outcome{metav1.ConditionFalse, picchuv1alpha1.ReasonTimedOut, false, true}
	unknown     = outcome{metav1.ConditionFalse, picchuv1alpha1.ReasonUnknownState, false, true}
)

// kstatusOf is what kstatus.Compute says of each outcome.
var kstatusOf = map[outcome]kstatus.Status{
	progressing: kstatus.InProgressStatus,
	released:    kstatus.CurrentStatus,
	settled:     kstatus.CurrentStatus,
	failed:      kstatus.FailedStatus,
	timedOut:    kstatus.FailedStatus,
	unknown:     kstatus.FailedStatus,
}

func rev(generation int64, targets ...picchuv1alpha1.RevisionTarget) *picchuv1alpha1.Revision {
	return &picchuv1alpha1.Revision{
		TypeMeta:   metav1.TypeMeta{APIVersion: picchuv1alpha1.GroupVersion.String(), Kind: "Revision"},
		ObjectMeta: metav1.ObjectMeta{Name: "shop-v2", Namespace: "picchu", Generation: generation},
		Spec: picchuv1alpha1.RevisionSpec{
			App:     picchuv1alpha1.RevisionApp{Name: "shop", Tag: "v2", Image: "shop:v2"},
			Targets: targets,
		},
		Status: picchuv1alpha1.RevisionStatus{ObservedGeneration: generation},
	}
}

func target(name string, eligible bool) picchuv1alpha1.RevisionTarget {
	return picchuv1alpha1.RevisionTarget{Name: name, Release: picchuv1alpha1.ReleaseInfo{Eligible: eligible}}
}

func targetStatus(name string, state release.State, percent int32) picchuv1alpha1.RevisionTargetStatus {
	return picchuv1alpha1.RevisionTargetStatus{Name: name, State: string(state),
		Release: picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: percent, PeakPercent: percent}}
}

// check sets rev's conditions and checks them against want, their
// observedGeneration, and what kstatus makes of them.
func check(t *testing.T, r *picchuv1alpha1.Revision, want outcome, message string) {
	t.Helper()
	revision.SetConditions(r, time.Unix(1_700_000_000, 0))
	ready := meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReady)
	if ready == nil || ready.Status != want.ready || ready.Reason != want.reason {
		t.Errorf("Ready = %+v, want %s (%s)", ready, want.ready, want.reason)
	}
	if got := meta.IsStatusConditionTrue(r.Status.Conditions, picchuv1alpha1.ConditionReconciling); got != want.progressing {
		t.Errorf("Reconciling True = %v, want %v: %+v", got, want.progressing, r.Status.Conditions)
	}
	if got := meta.IsStatusConditionTrue(r.Status.Conditions, picchuv1alpha1.ConditionStalled); got != want.stalled {
		t.Errorf("Stalled True = %v, want %v: %+v", got, want.stalled, r.Status.Conditions)
	}
	for _, c := range r.Status.Conditions {
		if c.ObservedGeneration != r.Generation {
			t.Errorf("%s: observedGeneration %d, generation %d", c.Type, c.ObservedGeneration, r.Generation)
		}
		if c.Status != metav1.ConditionTrue && c.Type != picchuv1alpha1.ConditionReady {
			t.Errorf("%s is %s: an abnormal-true condition is only ever there when True", c.Type, c.Status)
		}
		if c.LastTransitionTime.IsZero() || c.Reason == "" || c.Message == "" {
			t.Errorf("%s lacks a time, reason or message: %+v", c.Type, c)
		}
	}
	if message != "" {
		main := ready
		switch {
		case want.stalled:
			main = meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionStalled)
		case want.progressing:
			main = meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReconciling)
		}
		if main == nil || main.Message != message {
			t.Errorf("message %+v, want %q", main, message)
		}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(r)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kstatus.Compute(&unstructured.Unstructured{Object: u})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != kstatusOf[want] {
		t.Errorf("kstatus: %s (%s), want %s", res.Status, res.Message, kstatusOf[want])
	}
}

// TestConditions_EveryState sets a one-target Revision's conditions for
// every state the release engine handles, eligible for release and not,
// and checks them and what kstatus.Compute (Flux's health checks, kubectl
// wait's idea of them, cli-utils appliers) makes of them.
func TestConditions_EveryState(t *testing.T) {
	for _, tc := range []struct {
		state              release.State
		eligible, inelig   outcome
		percent            int32
		message, ineligMsg string
	}{
		{"", progressing, progressing, 0, "production: pending", ""},
		{release.Created, progressing, progressing, 0, "production: created", ""},
		{release.Deploying, progressing, progressing, 0, "production: deploying", ""},
		// An eligible build moves on from deployed and tested at once
		// (or is held there while a cluster cannot be read); one that is
		// not eligible waits there for its TTL.
		{release.Deployed, progressing, settled, 0, "production: deployed", "production: deployed"},
		{release.PendingTest, progressing, progressing, 0, "", ""},
		{release.Testing, progressing, progressing, 0, "", ""},
		{release.Tested, progressing, settled, 0, "", "production: tested"},
		{release.Canarying, progressing, progressing, 10, "production: canarying 10%", ""},
		{release.Canaried, progressing, progressing, 10, "", ""},
		{release.PendingRelease, progressing, progressing, 10, "production: pendingrelease 10%", ""},
		{release.Releasing, progressing, progressing, 40, "production: releasing 40%", ""},
		{release.Released, released, released, 100, "production: released", ""},
		{release.Retiring, progressing, progressing, 30, "production: retiring 30%", ""},
		// Superseded by a newer build, or past its TTL: done.
		{release.Retired, settled, settled, 0, "production: retired", ""},
		{release.Failing, failed, failed, 20, "failed in production", ""},
		{release.Failed, failed, failed, 0, "failed in production", ""},
		{release.Deleting, progressing, progressing, 0, "", ""},
		{release.Deleted, progressing, progressing, 0, "", ""},
		{release.TimingOut, timedOut, timedOut, 0, "timed out in production", ""},
		{"canaryingdatadog", unknown, unknown, 0, `held: production is in "canaryingdatadog", a state this version of Picchu does not handle`, ""},
	} {
		for _, eligible := range []bool{true, false} {
			name := string(tc.state)
			if !eligible {
				name += "/not-eligible"
			}
			t.Run(name, func(t *testing.T) {
				r := rev(3, target("production", eligible))
				if tc.state != "" {
					r.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{targetStatus("production", tc.state, tc.percent)}
				}
				want, msg := tc.eligible, tc.message
				if !eligible {
					want, msg = tc.inelig, tc.ineligMsg
				}
				check(t, r, want, msg)
			})
		}
	}

	// Every state the engine handles is in the table above.
	covered := map[release.State]bool{}
	for _, s := range []release.State{"", release.Created, release.Deploying, release.Deployed, release.PendingTest,
		release.Testing, release.Tested, release.Canarying, release.Canaried, release.PendingRelease, release.Releasing,
		release.Released, release.Retiring, release.Retired, release.Failing, release.Failed, release.Deleting,
		release.Deleted, release.TimingOut} {
		covered[s] = true
	}
	for _, s := range release.States() {
		if !covered[s] {
			t.Errorf("state %q is not covered: decide what a Revision's conditions say of it", s)
		}
	}
}

// TestConditions_Targets covers Revisions of several targets: the worst
// target decides, and the messages say where each target is.
func TestConditions_Targets(t *testing.T) {
	prod, staging := target("production", true), target("staging", true)
	preview := target("preview", false)
	for _, tc := range []struct {
		name     string
		rev      *picchuv1alpha1.Revision
		statuses []picchuv1alpha1.RevisionTargetStatus
		want     outcome
		message  string
	}{
		{"one target still releasing", rev(1, prod, staging), []picchuv1alpha1.RevisionTargetStatus{
			targetStatus("production", release.Releasing, 40), targetStatus("staging", release.Released, 100),
		}, progressing, "production: releasing 40%; staging: released"},
		{"a target without a status yet", rev(1, staging, prod), []picchuv1alpha1.RevisionTargetStatus{
			targetStatus("staging", release.Released, 100),
		}, progressing, "staging: released; production: pending"},
		{"released everywhere", rev(1, prod, staging), []picchuv1alpha1.RevisionTargetStatus{
			targetStatus("production", release.Released, 100), targetStatus("staging", release.Released, 100),
		}, released, "production: released; staging: released"},
		{"released, and deployed where it is not eligible", rev(1, prod, preview), []picchuv1alpha1.RevisionTargetStatus{
			targetStatus("preview", release.Deployed, 0), targetStatus("production", release.Released, 100),
		}, settled, "production: released; preview: deployed"},
		{"paused", rev(1, prod), []picchuv1alpha1.RevisionTargetStatus{
			{Name: "production", State: string(release.Releasing), Paused: true, Release: picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: 20}},
		}, progressing, "production: releasing 20% (paused)"},
		{"a timeout in one target", rev(1, prod, staging), []picchuv1alpha1.RevisionTargetStatus{
			targetStatus("production", release.TimingOut, 0), targetStatus("staging", release.Released, 100),
		}, timedOut, "timed out in production"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rev.Status.Targets = tc.statuses
			check(t, tc.rev, tc.want, tc.message)
		})
	}
}

// TestConditions_Failed: a Revision marked failed is Stalled at once,
// whatever its targets say yet, with the failed-reason annotation as the
// message, and Ready False saying where the rollback is.
func TestConditions_Failed(t *testing.T) {
	r := rev(2, target("production", true))
	r.Spec.Failed = true
	r.Annotations = map[string]string{picchuv1alpha1.AnnotationFailedReason: "SLO alerts firing: availability_canary in production"}
	r.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{targetStatus("production", release.Canarying, 10)}
	check(t, r, failed, "SLO alerts firing: availability_canary in production")
	ready := meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReady)
	if want := "SLO alerts firing: availability_canary in production (production: canarying 10%)"; ready.Message != want {
		t.Errorf("Ready message %q, want %q", ready.Message, want)
	}

	// Marked failed by a person, without a reason.
	r = rev(2, target("production", true))
	r.Spec.Failed = true
	r.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{targetStatus("production", release.Failed, 0)}
	check(t, r, failed, "marked failed (spec.failed)")
}

// TestSetConditions_TransitionsOnly checks that conditions whose status
// stays keep their lastTransitionTime (so that a Revision whose state did
// not change is not written again), that a change of status moves it, and
// that Reconciling and Stalled go when they no longer hold, the
// Undecodable report included.
func TestSetConditions_TransitionsOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := rev(1, target("production", true))
	// What Picchu said while the Revision held a value it could not decode.
	for _, c := range []metav1.Condition{
		{Type: picchuv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonUndecodable, Message: "bad"},
		{Type: picchuv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonUndecodable, Message: "bad"},
		{Type: "Other", Status: metav1.ConditionTrue, Reason: "Kept", Message: "not Picchu's"},
	} {
		c.LastTransitionTime = metav1.NewTime(t0)
		meta.SetStatusCondition(&r.Status.Conditions, c)
	}
	r.Status.Targets = []picchuv1alpha1.RevisionTargetStatus{targetStatus("production", release.Releasing, 10)}
	if !revision.SetConditions(r, t0.Add(time.Minute)) {
		t.Fatal("no change reported")
	}
	if meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionStalled) != nil {
		t.Errorf("Stalled (Undecodable) stays: %+v", r.Status.Conditions)
	}
	if meta.FindStatusCondition(r.Status.Conditions, "Other") == nil {
		t.Errorf("a condition Picchu does not set is gone: %+v", r.Status.Conditions)
	}
	ready := *meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReady)
	if !ready.LastTransitionTime.Time.Equal(t0) || ready.Reason != picchuv1alpha1.ReasonProgressing {
		t.Errorf("Ready stayed False, yet %+v", ready)
	}
	reconciling := *meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReconciling)
	if !reconciling.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
		t.Errorf("Reconciling appeared at %s, want %s", reconciling.LastTransitionTime, t0.Add(time.Minute))
	}

	// The ramp moves on: messages change, times stay.
	r.Status.Targets[0].Release.CurrentPercent = 20
	if !revision.SetConditions(r, t0.Add(2*time.Minute)) {
		t.Error("a new message is a change")
	}
	if c := meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReconciling); !c.LastTransitionTime.Equal(&reconciling.LastTransitionTime) ||
		c.Message != "production: releasing 20%" {
		t.Errorf("Reconciling %+v", c)
	}
	// Nothing new: no change, whatever the clock says.
	before := r.DeepCopy()
	if revision.SetConditions(r, t0.Add(3*time.Minute)) {
		t.Errorf("a change reported for the same state: %+v, was %+v", r.Status.Conditions, before.Status.Conditions)
	}

	// Released: Ready True from then on, Reconciling gone.
	r.Status.Targets[0] = targetStatus("production", release.Released, 100)
	revision.SetConditions(r, t0.Add(4*time.Minute))
	ready = *meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReady)
	if ready.Status != metav1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("Ready %+v", ready)
	}
	if meta.FindStatusCondition(r.Status.Conditions, picchuv1alpha1.ConditionReconciling) != nil {
		t.Errorf("Reconciling stays once released: %+v", r.Status.Conditions)
	}

	// A new generation is observed on every condition.
	r.Generation = 2
	if !revision.SetConditions(r, t0.Add(5*time.Minute)) {
		t.Error("a new generation is a change")
	}
	for _, c := range r.Status.Conditions {
		if c.Type != "Other" && c.ObservedGeneration != 2 {
			t.Errorf("%s observed generation %d", c.Type, c.ObservedGeneration)
		}
	}
}
