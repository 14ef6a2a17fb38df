package release

import (
	"strings"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Verdict is what a build's SLO and canary alerts say of it while it is
// judged: from its canary until it is released (Judged).
type Verdict int

const (
	// Unjudged: no alert check applies (none configured, ignoreSLOs, the
	// build has proven itself, or it is not canarying or releasing).
	Unjudged Verdict = iota
	// Healthy: every check ran and no alert fires.
	Healthy
	// Firing: an alert fires; the build is about to be failed.
	Firing
	// Unobserved: a check could not run (the metrics provider is
	// unreachable or erred). Missing data is not good data.
	Unobserved
	// NoEvidence: no alert fires, but no request reached the canary: its
	// SLOs' queries have no series for its tag. A canary that saw no
	// traffic has not passed.
	NoEvidence
)

// Holds says the verdict stops the build's promotion: no canary passes and
// no step up is taken while alerts fire or cannot be read, or while a
// canary has seen no traffic.
func (v Verdict) Holds() bool { return v == Firing || v == Unobserved || v == NoEvidence }

func (v Verdict) String() string {
	switch v {
	case Healthy:
		return "healthy"
	case Firing:
		return "firing"
	case Unobserved:
		return "unobserved"
	case NoEvidence:
		return "no evidence"
	}
	return "unjudged"
}

// TargetPeak is what proving needs of one of a Revision's targets, in the
// Revision's order.
type TargetPeak struct {
	Name string
	// Acceptance is the target's acceptanceTarget.
	Acceptance bool
	// Peak is the most traffic the build has taken in the target.
	Peak int32
	// WavesLeft says the target releases in waves and the build has not
	// reached its release.max in the last one yet (WavesLeft).
	WavesLeft bool
	// Done says the target released the build and its release.watch is
	// over (Judged is false there).
	Done bool
}

// ProvingTarget is the target whose peak decides whether a build has proven
// itself: the first acceptance target or target whose name contains
// "production", else the first target. ok is false without targets.
func ProvingTarget(targets []TargetPeak) (TargetPeak, bool) {
	for _, t := range targets {
		if t.Acceptance || strings.Contains(t.Name, "production") {
			return t, true
		}
	}
	if len(targets) == 0 {
		return TargetPeak{}, false
	}
	return targets[0], true
}

// Proven says a build has proven itself, so that SLO alerts no longer fail
// it. With a threshold above 0 (--slo-proven-percent), as in the original:
// its proving target has peaked at threshold percent or more and, when it
// releases in waves, has its release.max in the last wave. With none (0,
// the default): its proving target released it and its watch is over
// (TargetPeak.Done), so a build is judged until it is released.
func Proven(targets []TargetPeak, threshold int32) bool {
	t, ok := ProvingTarget(targets)
	if !ok {
		return false
	}
	if threshold <= 0 {
		return t.Done
	}
	return !t.WavesLeft && t.Peak >= threshold
}

// JudgeInput is what says whether a build is still judged in a target.
type JudgeInput struct {
	// State is the build's recorded state there, entered at Since.
	State State
	Since time.Time
	// Watch is its release.watch.
	Watch time.Duration
	Now   time.Time
}

// WatchOf is how long a target's build stays judged once released: its
// release.watch, none when unset.
func WatchOf(r picchuv1alpha1.ReleaseInfo) time.Duration {
	if r.Watch == nil {
		return 0
	}
	return max(r.Watch.Duration, 0)
}

// Judged says a build is judged in a target, its alerts failing it and its
// gates comparing it: from its canary until it is released there (it has
// reached release.max in every wave), and for its watch after that. A
// threshold may prove it earlier (Proven); a build that leaves release
// (retiring, failing) is no longer judged.
func Judged(in JudgeInput) bool {
	if !in.State.IsJudged() {
		return false
	}
	return in.State != Released || in.Now.Before(in.Since.Add(in.Watch))
}

// WavesLeft says a build releasing in waves (wavePercents holds its traffic
// in each of two or more waves) has waves left: it ramps in a wave before
// the last, or has not reached max there yet. A build in any other state,
// or without waves, has none: its peak alone says whether it proved itself.
func WavesLeft(state State, wave int, wavePercents []int32, max int32) bool {
	last := len(wavePercents) - 1
	if state != Releasing || last < 1 {
		return false
	}
	return wave < last || wavePercents[last] < max
}
