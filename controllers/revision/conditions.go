package revision

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// progress is where a build stands in one target, for its conditions.
type progress int

const (
	// moving: the target is still taking the build somewhere.
	moving progress = iota
	// settled: the build is where it stays in the target.
	settled
	// failing: the build fails or failed in the target.
	failing
	// timedOut: the target timed out with the build.
	timedOut
	// unknown: the target records a state Picchu does not handle.
	unknown
)

// knownStates are the states the release engine handles.
var knownStates = func() map[release.State]bool {
	out := map[release.State]bool{}
	for _, s := range release.States() {
		out[s] = true
	}
	return out
}()

// targetProgress classifies a target's state of the build. A build that is
// eligible for release settles once released; one that is not settles
// once deployed or tested (it waits there for its TTL, taking no traffic).
// Either settles once retired: superseded by a newer build, or past its
// TTL. Every other state the engine handles is on the way somewhere.
func targetProgress(state release.State, eligible bool) progress {
	switch {
	case state.IsReleased() || state.IsRetired():
		return settled
	case state.WaitsForTTL():
		if eligible {
			return moving
		}
		return settled
	case state.IsFailed():
		return failing
	case state.IsTimedOut():
		return timedOut
	case state == "" || knownStates[state]:
		return moving
	}
	return unknown
}

// describeTarget is a target's part of the conditions' messages, such as
// "production: releasing 40%" or "staging: released". A target that has
// not recorded the build yet is "pending".
func describeTarget(name string, ts *picchuv1alpha1.RevisionTargetStatus) string {
	if ts == nil || ts.State == "" {
		return name + ": pending"
	}
	out := name + ": " + ts.State
	state := release.State(ts.State)
	if state.IsRamping() || (ts.Release.CurrentPercent > 0 && !state.IsReleased()) {
		out += fmt.Sprintf(" %d%%", ts.Release.CurrentPercent)
	}
	if ts.Paused {
		out += " (paused)"
	}
	return out
}

// Conditions returns the Revision's kstatus conditions, from its spec, its
// failed-reason annotation and status.targets (what its ReleaseManagers
// record for its tag), each with the Revision's generation and no
// lastTransitionTime: Ready always, and Reconciling or Stalled when True
// (the other is absent, which kstatus reads as False).
//
//   - Stalled True when the build failed: spec.failed (reason Failed, the
//     message being the picchu.medium.engineering/failed-reason annotation),
//     a target failing or failed (Failed: its external test failed),
//     timing out (TimedOut; Picchu fails the Revision next) or in a state
//     this Picchu does not handle (UnknownState), or held in a target
//     until a person acts (status.targets[].held: its reason,
//     ProtectedNamespace or NotOwned, and its message). Ready is False with the
//     same reason. A failed build does not come back by itself, so a
//     rollback under way is not Reconciling.
//   - Otherwise Reconciling True (reason Progressing) while some target
//     moves the build on, with every target's state in its message
//     ("production: releasing 40%; staging: released"), and Ready False
//     with the same.
//   - Otherwise Ready True: Released when every target released the build,
//     Settled when each holds it where it stays (see targetProgress).
func Conditions(rev *picchuv1alpha1.Revision) []metav1.Condition {
	sv := surveyTargets(rev)
	targets := strings.Join(sv.parts, "; ")
	if len(sv.parts) == 0 {
		targets = "no targets"
	}
	stalledReason, stalledMsg := sv.stall(rev)
	cond := func(t string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: rev.Generation}
	}
	switch {
	case stalledReason != "":
		return []metav1.Condition{
			cond(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, stalledReason, stalledMsg+" ("+targets+")"),
			cond(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, stalledReason, stalledMsg),
		}
	case sv.progressing || len(rev.Spec.Targets) == 0:
		return []metav1.Condition{
			cond(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, picchuv1alpha1.ReasonProgressing, targets),
			cond(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonProgressing, targets),
		}
	case sv.allReleased:
		return []metav1.Condition{cond(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonReleased, targets)}
	}
	return []metav1.Condition{cond(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, picchuv1alpha1.ReasonSettled, targets)}
}

// targetSurvey is what a Revision's targets say of it: each target told
// in a few words, and where it moves, failed, timed out, is held or is in
// a state this version does not know.
type targetSurvey struct {
	parts                     []string
	progressing, allReleased  bool
	failedIn, timedOutIn, odd []string
	heldIn                    []string
	heldReason                string
}

// surveyTargets reads rev's targets' recorded states.
func surveyTargets(rev *picchuv1alpha1.Revision) targetSurvey {
	byName := make(map[string]*picchuv1alpha1.RevisionTargetStatus, len(rev.Status.Targets))
	for i := range rev.Status.Targets {
		byName[rev.Status.Targets[i].Name] = &rev.Status.Targets[i]
	}
	sv := targetSurvey{allReleased: len(rev.Spec.Targets) > 0}
	for _, t := range rev.Spec.Targets {
		ts := byName[t.Name]
		sv.parts = append(sv.parts, describeTarget(t.Name, ts))
		var state release.State
		if ts != nil {
			state = release.State(ts.State)
		}
		sv.allReleased = sv.allReleased && state.IsReleased()
		if ts != nil && ts.Held != nil {
			sv.heldIn = append(sv.heldIn, t.Name+": "+ts.Held.Message)
			if sv.heldReason == "" {
				sv.heldReason = ts.Held.Reason
			}
		}
		switch targetProgress(state, t.Release.Eligible) {
		case moving:
			sv.progressing = true
		case failing:
			sv.failedIn = append(sv.failedIn, t.Name)
		case timedOut:
			sv.timedOutIn = append(sv.timedOutIn, t.Name)
		case unknown:
			sv.odd = append(sv.odd, fmt.Sprintf("%s is in %q", t.Name, state))
		}
	}
	return sv
}

// stall is why rev is stalled and what to tell of it, or "" when it is
// not: failed, in a state unknown here, timed out, or held.
func (sv targetSurvey) stall(rev *picchuv1alpha1.Revision) (reason, msg string) {
	switch {
	case rev.Spec.Failed:
		msg = rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
		if msg == "" {
			msg = "marked failed (spec.failed)"
		}
		return picchuv1alpha1.ReasonFailed, msg
	case len(sv.odd) > 0:
		return picchuv1alpha1.ReasonUnknownState, "held: " + strings.Join(sv.odd, ", ") + ", a state this version of Picchu does not handle"
	case len(sv.timedOutIn) > 0:
		return picchuv1alpha1.ReasonTimedOut, "timed out in " + strings.Join(sv.timedOutIn, ", ")
	case len(sv.failedIn) > 0:
		return picchuv1alpha1.ReasonFailed, "failed in " + strings.Join(sv.failedIn, ", ")
	case len(sv.heldIn) > 0:
		return sv.heldReason, "held in " + strings.Join(sv.heldIn, "; ")
	}
	return "", ""
}

// SetConditions sets the Revision's Ready, Reconciling and Stalled
// conditions to Conditions', removing Reconciling or Stalled when absent
// there, and reports whether they changed. now is the lastTransitionTime of
// a condition whose status changes: one whose status stays keeps its time,
// so a Revision whose conditions say the same thing is not written again.
// Other conditions are left as they are.
func SetConditions(rev *picchuv1alpha1.Revision, now time.Time) bool {
	changed := false
	want := map[string]bool{}
	for _, c := range Conditions(rev) {
		want[c.Type] = true
		c.LastTransitionTime = metav1.NewTime(now)
		changed = meta.SetStatusCondition(&rev.Status.Conditions, c) || changed
	}
	for _, t := range []string{picchuv1alpha1.ConditionReconciling, picchuv1alpha1.ConditionStalled} {
		if !want[t] {
			changed = meta.RemoveStatusCondition(&rev.Status.Conditions, t) || changed
		}
	}
	return changed
}
