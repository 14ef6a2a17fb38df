package releasemanager

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// buildOutcome is what a run comes to for one build.
type buildOutcome struct {
	// state is the state recorded; status is the build's new status entry,
	// nil when the build is gone for good.
	state  release.State
	status *picchuv1alpha1.ReleaseManagerRevisionStatus
	// changed says the state changed (or the build is gone); events are
	// the build's events.
	changed bool
	events  []statusEvent
	// controls are the manual controls acted on.
	controls []controlAction
}

// recordedRejection is why a build is recorded rejected, from what was
// recorded and what this run found: what it found, but a failed build
// keeps its record, as it is no longer inspected nor applied and no run
// would find the reason again.
func recordedRejection(inc *incarnation, recorded, found string) string {
	if found == "" && inc.revision != nil && inc.revision.Spec.Failed {
		return recorded
	}
	return found
}

// note adds an event of kind and reason to the build's events.
func (o *buildOutcome) note(kind, reason, format string, args ...any) {
	o.events = append(o.events, statusEvent{kind: kind, reason: reason, note: fmt.Sprintf(format, args...)})
}

// buildReport makes a build's status entry and events from the step it
// settled on (settleBuild), its traffic moved at moved.
func (s *snapshot) buildReport(inc *incarnation, b settledBuild, clusters clusterOutcome, moved time.Time) buildOutcome {
	state := b.state
	out := buildOutcome{state: state, changed: string(state) != inc.status.State.Current}
	out.events = append(out.events, migrated(inc)...)
	if state.IsDeleted() && inc.revision == nil {
		out.changed = true
		out.note(corev1.EventTypeNormal, "StateChanged", "%s %s → %s", inc.tag, inc.status.State.Current, state)
		return out
	}
	st := s.buildStatus(inc, b, clusters, moved)
	if b.rejected != "" && st.Rejected == "" && inc.revision != nil && !inc.revision.Spec.Failed {
		out.note(corev1.EventTypeWarning, "Rejected", "%s rejected by %s", inc.tag, b.rejected)
	}
	st.Rejected = recordedRejection(inc, st.Rejected, b.rejected)
	if out.changed {
		out.noteTransition(inc, state)
	}
	if e, ok := s.recordFiring(inc, &st); ok {
		out.events = append(out.events, e)
	}
	if inc.recommissioned && !inc.rolledBackNow() {
		out.note(corev1.EventTypeNormal, "StateChanged", "%s recommissioned: no healthy build serves", inc.tag)
	}
	out.controls = s.recordControl(inc, &st)
	for _, a := range out.controls {
		out.note(corev1.EventTypeNormal, a.reason, "%s", a.note)
	}
	if inc.rollbackIgnored != "" {
		out.note(corev1.EventTypeWarning, "RollbackIgnored", "the rollback to %s requested by %s is ignored in %s: %s",
			inc.tag, inc.control.by, s.rm.Spec.Target, inc.rollbackIgnored)
	}
	out.status = &st
	return out
}

// buildStatus is build inc's status entry after the step it settled on,
// its traffic moved at moved: its state and traffic, its peak, its waves,
// where it is routed and what each cluster's verdict is.
func (s *snapshot) buildStatus(inc *incarnation, b settledBuild, clusters clusterOutcome, moved time.Time) picchuv1alpha1.ReleaseManagerRevisionStatus {
	st := incarnationStatus(inc, b.state, b.weight, s.now, moved, s.observation)
	// The peak counts only the traffic the build's own state granted it
	// (its canary, its ramp's steps), never what it served because the
	// rest had to go somewhere.
	st.PeakPercent = max(inc.peak, b.earned)
	s.recordWaves(&st, inc, b.recorded, b.settled, moved)
	// A build that drains keeps its record of where it was routed, and
	// when that stopped: its pods go its scale-down delay after the last.
	st.Clusters = clusterWeights(inc.status.Clusters, s.clusterNames(), clusters.routed, s.clusterWeight(inc), moved,
		b.state.IsRoutable() || s.draining(inc))
	clusterVerdicts(st.Clusters, inc)
	if inc.verdict != release.Unjudged {
		st.Verdict = inc.comparison
	}
	return st
}

// noteTransition tells that build inc went to state: the way it went,
// and a rollback's start or end.
func (o *buildOutcome) noteTransition(inc *incarnation, state release.State) {
	o.note(corev1.EventTypeNormal, "StateChanged", "%s %s", inc.tag, inc.statePath(state))
	switch {
	case state.IsRollingBack():
		o.note(corev1.EventTypeWarning, "RollingBack", "%s failed; its traffic goes back to the previous release on every cluster", inc.tag)
	case state.IsRolledBack():
		o.note(corev1.EventTypeWarning, "RolledBack", "%s failed and was rolled back", inc.tag)
	}
}

// recordFiring puts the alerts firing for a judged build this run on its
// record, and returns the event that tells of those new there. Once seen
// firing while judged, the alerts stay on record: the Revision controller
// fails the build from them.
func (s *snapshot) recordFiring(inc *incarnation, st *picchuv1alpha1.ReleaseManagerRevisionStatus) (statusEvent, bool) {
	if inc.verdict != release.Firing {
		return statusEvent{}, false
	}
	before := len(st.TriggeredAlerts)
	st.TriggeredAlerts = union(st.TriggeredAlerts, inc.firing)
	if len(st.TriggeredAlerts) == before {
		return statusEvent{}, false
	}
	where := s.firingWhere(inc)
	if st.TriggeredWhere == "" {
		st.TriggeredWhere = where
	}
	if where != "" {
		where = " in " + where
	}
	return statusEvent{kind: corev1.EventTypeWarning, reason: "AlertsFiring",
		note: fmt.Sprintf("%s: %s firing%s while it was judged", inc.tag, strings.Join(inc.firing, ", "), where)}, true
}

// statePath is the way the build went this run: its recorded state, the
// states it passed through and state ("v2 deployed → pendingrelease →
// releasing").
func (inc *incarnation) statePath(state release.State) string {
	path := []string{displayState(inc.status.State.Current)}
	for _, p := range inc.entered(state) {
		path = append(path, string(p))
	}
	return strings.Join(path, " → ")
}

// passedTo are the states the build passed through this run on its way
// to state, in order, a slice of its own: those Advance passed, when
// state is its step's, and its step's state as well, when state is its
// step's Then and the step's state was not the recorded one (a first
// build released at once passes through releasing).
func (inc *incarnation) passedTo(state release.State) []release.State {
	step := inc.step
	switch {
	case state == step.State:
		return slices.Clone(inc.passed)
	case step.Then != "" && state == step.Then && string(step.State) != inc.status.State.Current:
		return append(slices.Clone(inc.passed), step.State)
	}
	return nil
}

// entered are the states the build entered this run on its way to state,
// in order, state last: a slice of its own.
func (inc *incarnation) entered(state release.State) []release.State {
	return append(inc.passedTo(state), state)
}

func displayState(s string) string {
	if s == "" {
		return "new"
	}
	return s
}

// incarnationStatus is the recorded status of a build after this run,
// whose states are entered at, and whose traffic moved at moved.
func incarnationStatus(inc *incarnation, state release.State, weight int32, at, moved time.Time, obs release.Observation) picchuv1alpha1.ReleaseManagerRevisionStatus {
	now := picchuv1alpha1.NewTimestamp(at)
	st := *inc.status.DeepCopy()
	st.Tag = inc.tag
	if inc.step.Restart && string(state) == st.State.Current {
		// The state's clock starts over (a deploy held for room).
		st.State.LastUpdated = &now
	}
	if string(state) != st.State.Current {
		st.State.Current = string(state)
		st.State.LastUpdated = &now
		// The states passed through on the way were entered now too.
		for _, entered := range inc.entered(state) {
			switch {
			case entered.IsRollingOut():
				st.DeployingStartTimestamp = &now
			case entered.IsPendingRelease():
				st.PendingReleaseStartTimestamp = &now
			case entered.IsRamping():
				st.ReleaseStartTimestamp = &now
			}
		}
	}
	st.State.Target = string(state)
	if weight != st.CurrentPercent {
		stamp := picchuv1alpha1.NewTimestamp(moved)
		st.CurrentPercent = weight
		st.LastUpdated = &stamp
	}
	if state.RunsCanary() && st.CurrentPercent > 0 && st.CanaryStartTimestamp == nil {
		st.CanaryStartTimestamp = &now
	}
	st.ReleaseEligible = inc.eligible
	st.PeakPercent = inc.peak
	st.Deleted = inc.revision == nil
	if inc.revision != nil {
		created := inc.revision.CreationTimestamp
		st.RevisionTimestamp = &created
		if t, ok := parseTimestamp(inc.revision.Annotations[picchuv1alpha1.AnnotationGitCommitterTimestamp]); ok {
			git := metav1.NewTime(t)
			st.GitTimestamp = &git
		}
		// Eligibility and TTL follow the Revision only until the build is
		// deployed; after that the release record owns them.
		if state.IsDeploying() {
			st.ReleaseEligible = inc.target.Release.Eligible && !inc.superseded
			st.TTL = inc.target.Release.TTL
		}
	}
	live := obs.Live(inc.tag)
	st.Scale.Peak = max(st.Scale.Peak, live.Available)
	if state.IsFinished() && !state.IsInProgress() {
		// Retired, failed or deleted: its ReplicaSets were scaled to
		// nothing, or removed, before the state was recorded. What still
		// terminates is not counted, so the record is whole with the state
		// and needs no write of its own once the pods are gone.
		live = release.Replicas{}
	}
	st.Scale.Current = live.Available
	st.Scale.Desired = live.Desired
	return st
}

// clusterWeights is a build's per-cluster record after a run that applied
// its weight in each (weightIn) to the routed clusters of the fleet
// (names): a routed cluster has its weight, stamped now when it changed;
// any other keeps what it had (or has no entry, never having been routed). Clusters gone from the fleet are
// dropped, and so is the whole record once the build is not routable and
// no cluster routes it traffic, but for the entries where the judgment
// recorded alerts or a verdict: a failed build, rolled back, still says
// which clusters failed it.
func clusterWeights(before []picchuv1alpha1.ReleaseManagerRevisionClusterStatus, names []string, routed map[string]bool,
	weightIn func(cluster string) int32, now time.Time, routable bool) []picchuv1alpha1.ReleaseManagerRevisionClusterStatus {
	var out []picchuv1alpha1.ReleaseManagerRevisionClusterStatus
	traffic := false
	for _, name := range names {
		i := slices.IndexFunc(before, func(c picchuv1alpha1.ReleaseManagerRevisionClusterStatus) bool { return c.Name == name })
		var entry picchuv1alpha1.ReleaseManagerRevisionClusterStatus
		weight := weightIn(name)
		switch {
		case routed[name] && (i < 0 || before[i].Percent != weight):
			stamp := picchuv1alpha1.NewTimestamp(now)
			if i >= 0 {
				// What the judgment recorded there stays.
				entry = *before[i].DeepCopy()
			}
			entry.Name, entry.Percent, entry.LastUpdated = name, weight, &stamp
		case i >= 0:
			entry = *before[i].DeepCopy()
		default:
			continue
		}
		traffic = traffic || entry.Percent > 0
		out = append(out, entry)
	}
	if !routable && !traffic {
		out = slices.DeleteFunc(out, func(e picchuv1alpha1.ReleaseManagerRevisionClusterStatus) bool {
			return len(e.TriggeredAlerts) == 0 && e.Verdict == ""
		})
		if len(out) == 0 {
			return nil
		}
	}
	return out
}

// clusterNames are the names of the fleet's enabled clusters, sorted.
func (s *snapshot) clusterNames() []string {
	out := make([]string, 0, len(s.fleet))
	for _, fc := range s.fleet {
		out = append(out, fc.obj.Name)
	}
	return out
}

// union is the sorted union of two sets of names.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// apiMessage is the API server's message of err, or err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// migrated is the event of a build whose recorded state was a legacy
// state of the original's (release.Migrated), if it was: the status is
// written with today's state, and the event says why.
func migrated(inc *incarnation) []statusEvent {
	if inc.migratedFrom == "" {
		return nil
	}
	return []statusEvent{{kind: corev1.EventTypeNormal, reason: "Migrated",
		note: fmt.Sprintf("%s was recorded in %s, a state of the original's that is gone: it is %s now", inc.tag, inc.migratedFrom, inc.status.State.Current)}}
}
