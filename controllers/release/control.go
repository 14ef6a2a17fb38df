package release

import "time"

// Control is what a person asked of a build through its Revision (kubectl
// picchu, or its annotations).
type Control struct {
	// Paused holds the build where it is: its canary does not end (its
	// timer stops: see Resumed), a release waiting on its schedule does not
	// start, and its ramp takes no step up. A failure still proceeds.
	Paused bool
	// Promote is a promote request the target has not acted on yet: a
	// running canary ends now and a release waiting on its schedule starts
	// now (the ramp's step is RampInput.Skip).
	Promote bool
}

// Promotable says a promote request can still move a build in state s on,
// so it waits to be acted on: the build is on its way to its release. In
// any other state a request is dropped without effect.
func Promotable(s State) bool {
	switch s {
	case Created, Deploying, Deployed, PendingTest, Testing, Tested, Canarying, Canaried, PendingRelease, Releasing:
		return true
	}
	return false
}

// Resumed is when a canary that started at start and was paused at paused
// counts as started once it resumes at now: the pause does not count
// against its TTL. A canary that had not started, or a pause that is not
// after its start, leaves start as it is.
func Resumed(start, paused, now time.Time) time.Time {
	if start.IsZero() || paused.IsZero() || !paused.After(start) || !now.After(paused) {
		return start
	}
	return start.Add(now.Sub(paused))
}

// Superseded says which builds a rollback takes out of release. Builds are
// ordered newest first; target is the index of the build rolled back to,
// created the times the builds were created and at the time of the
// request. A build ordered newer than the target that was created no later
// than the request loses its eligibility; one created after the request
// (the next build CI applies) is released as usual. A target out of range
// supersedes nothing.
func Superseded(created []time.Time, target int, at time.Time) []bool {
	out := make([]bool, len(created))
	if target < 0 || target >= len(created) {
		return out
	}
	for i := range target {
		out[i] = !created[i].After(at)
	}
	return out
}

// LatestRequest is the index of the latest of requests (zero times are no
// request), -1 when there is none. Of equal times the first wins.
func LatestRequest(requests []time.Time) int {
	latest := -1
	for i, t := range requests {
		if !t.IsZero() && (latest < 0 || t.After(requests[latest])) {
			latest = i
		}
	}
	return latest
}
