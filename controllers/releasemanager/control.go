package releasemanager

import (
	"fmt"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// control is what a person asked of a build through its Revision's
// annotations (kubectl picchu writes them; see api/v1alpha1/labels.go).
type control struct {
	paused bool
	// promote is the promote request, "" for none; full says it asks
	// for a full promotion.
	promote string
	full    bool
	// rollback is the rollback request, rollbackAt the time it says (the
	// client's clock) and rollbackReceived when the webhook received it
	// (zero when it did not stamp it).
	rollback                     string
	rollbackAt, rollbackReceived time.Time
	// by is who made the last change.
	by string
}

// controlOf reads a Revision's control annotations. A promote or rollback
// annotation that does not parse is no request.
func controlOf(rev *picchuv1alpha1.Revision) control {
	a := rev.Annotations
	c := control{by: a[picchuv1alpha1.AnnotationControlBy]}
	_, c.paused = a[picchuv1alpha1.AnnotationPause]
	if full, ok := picchuv1alpha1.ParsePromoteRequest(a[picchuv1alpha1.AnnotationPromote]); ok {
		c.promote, c.full = a[picchuv1alpha1.AnnotationPromote], full
	}
	if at, ok := picchuv1alpha1.ParseRollbackRequest(a[picchuv1alpha1.AnnotationRollback]); ok {
		c.rollback, c.rollbackAt = a[picchuv1alpha1.AnnotationRollback], at
		if received, ok := picchuv1alpha1.ParseRollbackRequest(a[picchuv1alpha1.AnnotationRollbackAt]); ok {
			c.rollbackReceived = received
		}
	}
	if c.by == "" {
		c.by = "unknown"
	}
	return c
}

// canaryStart is when the build's canary counts as started at now: its
// recorded start, moved on by the pause when a running canary resumes now
// (release.Resumed), so the pause does not count against its TTL.
func (inc *incarnation) canaryStart(now time.Time) time.Time {
	st := inc.status
	start := stampOf(st.CanaryStartTimestamp)
	if st.Paused == nil || inc.control.paused || !release.State(st.State.Current).RunsCanary() {
		return start
	}
	return release.Resumed(start, st.Paused.Time, now)
}

// promotePending says the build has a promote request this target has not
// acted on.
func (inc *incarnation) promotePending() bool {
	return inc.control.promote != "" && inc.control.promote != inc.status.Promoted
}

// rampsFull says the build ramps straight to its max: a full promotion,
// or the build an app is rolled back to.
func (inc *incarnation) rampsFull() bool {
	return inc.control.full || inc.rollbackTarget
}

// rolledBackNow says this run acts on a rollback request to the build.
func (inc *incarnation) rolledBackNow() bool {
	return inc.rollbackTarget && inc.control.rollback != inc.status.RolledBack
}

// rollBack applies the app's rollback requests (release.DecideRollback):
// it marks the build rolled back to, the builds it takes out of release,
// and the requests ignored from this run on. A request for a build that
// failed is refused (retry it first), so it supersedes nothing.
func (s *snapshot) rollBack() {
	requests := make([]release.RollbackRequest, len(s.incarnations))
	created := make([]time.Time, len(s.incarnations))
	for i, inc := range s.incarnations {
		if inc.revision == nil {
			created[i] = inc.order
			continue
		}
		created[i] = inc.revision.CreationTimestamp.Time
		c := inc.control
		ignored := inc.status.IgnoredRollback
		requests[i] = release.RollbackRequest{
			Request: c.rollback, Said: c.rollbackAt, Received: c.rollbackReceived,
			Refused: inc.revision.Spec.Failed,
			Acted:   c.rollback != "" && c.rollback == inc.status.RolledBack,
			Ignored: ignored != nil && c.rollback == ignored.Request,
		}
	}
	d := release.DecideRollback(created, requests, s.now, picchuv1alpha1.MaxControlSkew)
	for i, inc := range s.incarnations {
		inc.rollbackTarget, inc.superseded, inc.rollbackIgnored = i == d.Target, d.Superseded[i], d.Ignored[i]
	}
}

// bringBack makes the build rolled back to eligible and released (peak
// 100) in the run that acts on the request, as recommissioning does, and
// says whether it did.
func (s *snapshot) bringBack() bool {
	for _, inc := range s.incarnations {
		if inc.rolledBackNow() {
			inc.recommissioned = !inc.eligible
			inc.eligible, inc.peak = true, 100
			return true
		}
	}
	return false
}

// promoteActed says a pending promote request was acted on this run: the
// canary ended, a release waiting on its schedule started, the ramp took
// a step up, or the build is past where a promotion can move it.
func (inc *incarnation) promoteActed(from release.State) bool {
	to := inc.step.State
	switch {
	case !inc.promotePending():
		return false
	case release.PromotionTaken(from, to):
		return true
	case inc.ramping && inc.weight > inc.status.CurrentPercent:
		return true
	}
	return !release.Promotable(to)
}

// controlAction is a manual control of a build a run acted on.
type controlAction struct {
	inc *incarnation
	// action is the picchu_release_controls_total action; reason and note
	// the event's.
	action, reason, note string
}

// recordControl writes in st what this run did of what a person asked of
// the build and returns those actions: a pause (the canary's timer stops)
// or resume (a running canary's start moves on by the pause), a promote request acted
// on, a rollback to it, and a build aborted (failed by a person: Picchu's
// own failures carry AnnotationFailedAt) or retried. A retry clears the
// record that failed the build, keeping it in st.Retries, so the build is
// canaried and judged again from the start.
func (s *snapshot) recordControl(inc *incarnation, st *picchuv1alpha1.ReleaseManagerRevisionStatus) []controlAction {
	if inc.revision == nil {
		return nil
	}
	var out []controlAction
	c := inc.control
	acted := func(action, reason, format string, args ...any) {
		note := fmt.Sprintf("%s %s in %s by %s", inc.tag, fmt.Sprintf(format, args...), s.rm.Spec.Target, c.by)
		out = append(out, controlAction{inc: inc, action: action, reason: reason, note: note})
	}
	now := picchuv1alpha1.NewTimestamp(s.now)
	switch {
	case c.paused && st.Paused == nil:
		st.Paused = &now
		acted("pause", "Paused", "paused at %d%%", inc.status.CurrentPercent)
	case !c.paused && st.Paused != nil:
		// A canary that ran during the pause starts later by the pause;
		// one that starts this run has nothing to move.
		if start := inc.canaryStart(s.now); inc.status.CanaryStartTimestamp != nil && st.CanaryStartTimestamp != nil &&
			!start.Equal(st.CanaryStartTimestamp.Time) {
			resumed := picchuv1alpha1.NewTimestamp(start)
			st.CanaryStartTimestamp = &resumed
		}
		st.Paused = nil
		acted("resume", "Resumed", "resumed at %d%%", inc.status.CurrentPercent)
	}
	from := release.State(inc.status.State.Current)
	if inc.promoteActed(from) {
		st.Promoted = c.promote
		mode := picchuv1alpha1.PromoteNext
		if c.full {
			mode = picchuv1alpha1.PromoteFull
		}
		acted("promote", "Promoted", "promoted (%s) from %s", mode, displayState(string(from)))
	}
	if inc.rolledBackNow() {
		st.RolledBack = c.rollback
		acted("rollback", "RolledBackTo", "brought back: the app is rolled back to it")
	}
	if st.IgnoredRollback != nil && st.IgnoredRollback.Request != c.rollback {
		st.IgnoredRollback = nil // a new request, or none: the old one is gone
	}
	if inc.rollbackIgnored != "" {
		st.IgnoredRollback = &picchuv1alpha1.ReleaseManagerIgnoredRequest{Request: c.rollback, Reason: inc.rollbackIgnored, Time: now}
	}
	to := release.State(st.State.Current)
	failedBefore := from.IsFailed()
	switch {
	case to.IsRollingBack() && !failedBefore && inc.revision.Spec.Failed &&
		inc.revision.Annotations[picchuv1alpha1.AnnotationFailedAt] == "":
		acted("abort", "Aborted", "aborted (%s)", inc.revision.Annotations[picchuv1alpha1.AnnotationFailedReason])
	case failedBefore && !to.IsFailed():
		recordRetry(inc, st, from, now)
		acted("retry", "Retried", "retried after it %s", from)
	}
	return out
}

// recordRetry records that a failed build is retried (it deploys again,
// or, when it still serves, is released again or retires): where it failed
// joins its retries (the last maxRetries kept), and its judgment starts over.
func recordRetry(inc *incarnation, st *picchuv1alpha1.ReleaseManagerRevisionStatus, from release.State, now picchuv1alpha1.Timestamp) {
	st.Retries = append(st.Retries, picchuv1alpha1.ReleaseManagerRetryStatus{
		Time: now, State: string(from), PeakPercent: inc.status.PeakPercent,
		TriggeredAlerts: inc.status.TriggeredAlerts, Rejected: inc.status.Rejected,
	})
	if n := len(st.Retries); n > maxRetries {
		st.Retries = st.Retries[n-maxRetries:]
	}
	st.TriggeredAlerts, st.TriggeredWhere, st.Rejected, st.CanaryStartTimestamp, st.PeakPercent = nil, "", "", nil, 0
	for i := range st.Clusters {
		st.Clusters[i].TriggeredAlerts, st.Clusters[i].Verdict = nil, ""
	}
}

// maxRetries is how many retries a build's status keeps.
const maxRetries = 10
