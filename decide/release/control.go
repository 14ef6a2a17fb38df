package release

import (
	"fmt"
	"slices"
	"time"
)

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

// RollbackRequest is a build's rollback request as the app's rollback
// sees it.
type RollbackRequest struct {
	// Request is the request (the Revision's rollback annotation), "" for
	// none.
	Request string
	// Said is the time the request says, written by the client's clock;
	// Received is when the webhook received it (zero when it did not
	// stamp it).
	Said, Received time.Time
	// Refused says the build cannot be rolled back to: it is failed.
	Refused bool
	// Acted and Ignored say this target acted on the request, or ignored
	// it, in an earlier run: it is not judged again.
	Acted, Ignored bool
}

// Time is the time the request is ordered by: when the webhook received
// it, else the time it says.
func (r RollbackRequest) Time() time.Time {
	if !r.Received.IsZero() {
		return r.Received
	}
	return r.Said
}

// source says which clock Time read, for the reasons a request is ignored.
func (r RollbackRequest) source() string {
	if !r.Received.IsZero() {
		return "received"
	}
	return "written by the client's clock"
}

// Rollback is what an app's rollback requests come to in a target.
type Rollback struct {
	// Target is the index of the build rolled back to (-1: none), and At
	// the time its request is ordered by.
	Target int
	At     time.Time
	// Superseded says which builds the rollback takes out of release.
	Superseded []bool
	// Ignored says, per build, why its request is ignored from this run on
	// ("" when it is not newly ignored).
	Ignored []string
}

// DecideRollback decides an app's rollback in a target from its builds,
// ordered newest first, with the times their Revisions were created and
// their rollback requests, at now (the controller's clock):
//
//   - A request whose time is more than maxSkew ahead of now is ignored: a
//     fast clock or a hand-written time would take out of release every
//     build created until then, for as long as the request stands.
//   - The latest of the other requests (of builds not failed, not ignored
//     in an earlier run) is the app's rollback: every build ordered newer
//     than the build it names and created no later than its time is
//     superseded (Superseded).
//   - A request not acted on yet that would supersede no build is ignored:
//     it would roll nothing back (a slow clock wrote a time before the
//     builds it meant to roll back, or none is newer), and the latest of
//     the others is taken.
//
// A request ignored stays ignored, even once its time has come: a new
// request is judged anew.
func DecideRollback(created []time.Time, requests []RollbackRequest, now time.Time, maxSkew time.Duration) Rollback {
	out := Rollback{Target: -1, Superseded: make([]bool, len(created)), Ignored: make([]string, len(requests))}
	times := make([]time.Time, len(requests))
	for i, r := range requests {
		switch {
		case r.Request == "" || r.Refused || r.Ignored:
		case !r.Acted && r.Time().After(now.Add(maxSkew)):
			out.Ignored[i] = fmt.Sprintf("its time, %s (%s), is %s ahead of Picchu's clock: it would hold back every build created until then",
				r.Time().UTC().Format(time.RFC3339), r.source(), r.Time().Sub(now).Round(time.Second))
		default:
			times[i] = r.Time()
		}
	}
	for {
		target := LatestRequest(times)
		if target < 0 {
			return out
		}
		superseded := Superseded(created, target, times[target])
		if requests[target].Acted || slices.Contains(superseded, true) {
			out.Target, out.At, out.Superseded = target, times[target], superseded
			return out
		}
		out.Ignored[target] = fmt.Sprintf("no newer build was created before its time, %s (%s): it would roll nothing back",
			times[target].UTC().Format(time.RFC3339), requests[target].source())
		times[target] = time.Time{}
	}
}
