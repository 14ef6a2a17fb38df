package releasemanager

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/releasemetrics"
)

// again is how soon a ReleaseManager runs again after a state change, so
// the next state's work starts at once.
const again = 10 * time.Millisecond

// clusterRetry is how soon a ReleaseManager tries again, at the latest, a
// cluster it could not update (sooner when a step is due).
const clusterRetry = 10 * time.Second

// record writes the outcome of a run, as report computes it, into the
// ReleaseManager's status (only when it changed), emits its events, sets
// the metrics and says when to run again. A cluster's failure is in the
// status and the conditions, not an error: an error's backoff would throw
// away the due time and let step deadlines and alert checks slip by minutes.
func (r *Reconciler) record(ctx context.Context, s *snapshot, st settled) (ctrl.Result, error) {
	rm := s.rm
	rep := report(s, st, r.SyncPeriod, r.AlertCheckInterval)
	before := rm.Status.DeepCopy()
	rm.Status = rep.status
	for i := range rep.transitions {
		tr := &rep.transitions[i]
		for _, state := range tr.inc.entered(tr.state) {
			observeLatencies(rm, tr.inc, &rm.Status.Revisions[tr.index], state, s.now)
		}
	}
	r.forecastFinish(s, before, &rm.Status)
	next := rep.next
	p, err := r.persist(ctx, s, before, rep.events)
	if p.deferred {
		// The run's status waits: the deploys it started, watched, run
		// it again when they finish (or when the wait ends).
		next = rep.unmoved
	}
	wait, events := p.wait, p.events
	if errors.Is(err, errConflict) {
		// Someone else changed the ReleaseManager: decide again from it.
		ctrl.LoggerFrom(ctx).V(1).Info("status changed meanwhile; running again")
		return ctrl.Result{RequeueAfter: again}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait > 0 {
		next = min(next, wait)
	}
	if r.Recorder != nil {
		for _, e := range events {
			r.Recorder.Eventf(rm, nil, e.kind, e.reason, "Release", "%s", e.note)
		}
	}
	for _, a := range rep.controls {
		releasemetrics.Controlled(rm.Spec.App, rm.Spec.Target, a.action)
	}
	if r.Notifier != nil {
		for _, n := range notices(s, rep.transitions, rep.controls, rm.Status.Revisions) {
			r.Notifier.Notify(n)
		}
		if r.stuck.observe(client.ObjectKeyFromObject(rm).String(), rep.held.why != "", s.now, r.StuckAfter) {
			r.Notifier.Notify(stuckNotice(s, rep.held.tag, rep.held.why, r.StuckAfter))
		}
	}
	recordMetrics(rm, rm.Status.Revisions, s.now)
	applied := st.appliedOr(r.Now())
	for _, due := range rep.stepsDue {
		releasemetrics.ObserveStepLateness(rm.Spec.Target, due, applied)
	}
	return ctrl.Result{RequeueAfter: next, Priority: runPriority(rep.stepDue)}, nil
}

// Priorities of a ReleaseManager's next run in the controller's priority
// queue. A run a ramp step is due for goes ahead of those watch events
// queue (new builds' deploys, pods that became ready): a step waits for a
// worker, not behind the fleet's other work.
const (
	priorityStep  = 10
	priorityOther = 0
)

// runPriority is the priority of the next run of a ReleaseManager that
// has a ramp step due at stepDue (zero: none).
func runPriority(stepDue time.Time) *int {
	if stepDue.IsZero() {
		return ptr.To(priorityOther)
	}
	return ptr.To(priorityStep)
}

// errConflict says someone else wrote the ReleaseManager since the run read it.
var errConflict = errors.New("the release manager changed meanwhile")

// persisted is what persist did with a run's status.
type persisted struct {
	// wait is how long the status waits to be written; 0 when it was
	// written, or nothing changed.
	wait time.Duration
	// deferred says builds that only started their deploy wait, with
	// their events.
	deferred bool
	// events are the events to emit now: the run's, after those of the
	// runs whose status waited.
	events []statusEvent
}

// persist writes the run's status (s.rm's, decided from before), or keeps
// it for a later write when it may wait: replica counts alone
// (scaleOnlyWait), or builds that only started their deploy
// (deployStartsWait), whose events wait with it.
func (r *Reconciler) persist(ctx context.Context, s *snapshot, before *picchuv1alpha1.ReleaseManagerStatus, events []statusEvent) (persisted, error) {
	rm := s.rm
	key := client.ObjectKeyFromObject(rm)
	if s.pending != nil {
		events = mergeEvents(append(slices.Clone(s.pending.events), events...))
	}
	written := before
	if s.written != nil {
		written = s.written
	}
	since := s.pendingSince()
	if since.IsZero() {
		since = s.now
	}
	if sameStatus(written, &rm.Status) {
		r.unwritten.forget(key)
		return persisted{events: events}, nil
	}
	if wait := scaleOnlyWait(written, &rm.Status, s.now); wait > 0 {
		// Only replica counts moved: they go with the next write.
		r.unwritten.forget(key)
		return persisted{wait: wait, events: events}, nil
	}
	if wait := deployStartsWait(written, &rm.Status, since, s.now); wait > 0 {
		// Builds only started their deploy: the start goes with the next
		// write, at the latest when the wait ends, and so do its events.
		r.unwritten.keep(key, &pending{version: rm.ResourceVersion, status: rm.Status.DeepCopy(), events: events, since: since})
		return persisted{wait: wait, deferred: true}, nil
	}
	now := metav1.NewTime(s.now)
	rm.Status.LastUpdated = &now
	err := r.write(rm, func() error { return r.Client.Status().Update(ctx, rm) })
	r.unwritten.forget(key)
	switch {
	case apierrors.IsConflict(err):
		return persisted{}, errConflict
	case err != nil:
		return persisted{}, fmt.Errorf("writing status of release manager %s/%s: %w", rm.Namespace, rm.Name, err)
	}
	return persisted{events: events}, nil
}

// scaleRefresh is how long a change of builds' replica counts alone may
// wait for the next write of the status.
const scaleRefresh = 30 * time.Second

// scaleOnlyWait is how long the write of after may wait, when it differs
// from before only in builds' replica counts (current, desired, peak) and
// before was written less than scaleRefresh ago; zero when it may not
// wait. Replica counts are a view (no decision reads them back: each run
// observes the clusters), and they move on their own, with every pod that
// becomes available and every autoscaler's step: written with the state
// change that follows them, or at most every scaleRefresh, they cost no
// write of their own while a build deploys.
func scaleOnlyWait(before, after *picchuv1alpha1.ReleaseManagerStatus, now time.Time) time.Duration {
	if before.LastUpdated == nil {
		return 0
	}
	wait := before.LastUpdated.Add(scaleRefresh).Sub(now)
	if wait <= 0 || sameStatus(before, after) {
		return 0
	}
	unscaled := after.DeepCopy()
	for i := range unscaled.Revisions {
		st := &unscaled.Revisions[i]
		j := slices.IndexFunc(before.Revisions, func(b picchuv1alpha1.ReleaseManagerRevisionStatus) bool { return b.Tag == st.Tag })
		if j < 0 {
			return 0
		}
		st.Scale = before.Revisions[j].Scale
	}
	if !sameStatus(before, unscaled) {
		return 0
	}
	return wait
}

// outcome is what a run of the ReleaseManager comes to, computed by report.
type outcome struct {
	// status is the ReleaseManager's new status, but for LastUpdated and
	// the latency marks in status.revisions[].metrics, which record sets.
	status picchuv1alpha1.ReleaseManagerStatus
	// transitions are the builds whose state changed, for their latencies.
	transitions []transition
	// events are the events to emit once the status is written.
	events []statusEvent
	// controls are the manual controls acted on, counted once the status
	// is written.
	controls []controlAction
	// held says which build is in progress while a cluster or the metrics
	// provider cannot be reached, and why: a release that holds so long
	// enough is told stuck.
	held struct{ tag, why string }
	// next is when to run again; unmoved when, had nothing changed (a
	// status that waits to be written: its change waits for what comes
	// next, not a run of its own).
	next, unmoved time.Duration
	// stepsDue are when the ramp steps this run took on every live cluster
	// were due, for their lateness.
	stepsDue []time.Time
	// stepDue is when the next ramp step of a build is due, the earliest;
	// zero when none is.
	stepDue time.Time
}

// transition is a build whose state changed, at index in status.revisions.
type transition struct {
	inc   *incarnation
	index int
	state release.State
}

// statusEvent is an event to emit on the ReleaseManager.
type statusEvent struct{ kind, reason, note string }

// report computes, purely from the snapshot after its decisions and what
// the clusters took of them (settle), the ReleaseManager's new status, its
// events and when to run again: the next step or deadline due, sooner while
// builds are judged (alertCheck) or a cluster was not synced, at the latest
// after syncPeriod, and at once after a state changed or traffic moved
// other than by a ramp's step (moveOf).
func report(s *snapshot, settled settled, syncPeriod, alertCheck time.Duration) outcome {
	clusters := settled.clusters
	r := reporter{s: s}
	r.c.unavailable = clusters.unavailable
	for _, inc := range s.incarnations {
		if inc.step.Drop {
			continue
		}
		r.add(inc, s.buildReport(inc, settled.builds[inc.tag], clusters, settled.appliedOr(s.now)))
	}
	rm := s.rm.DeepCopy()
	rm.Status.Clusters = clusters.statuses
	rm.Status.Revisions, rm.Status.Releasing = r.revisions, r.releasing
	rm.Status.ObservedGeneration = rm.Generation
	out := r.out
	out.held.tag, out.held.why = heldBy(s, r.c)
	r.c.notOwned, r.c.hostsRefused = clusters.notOwned, clusters.hostsRefused
	due := earliest(r.due, s.reportConditions(rm, r.c, settled.externalSecretsMissing))
	due = earliest(due, s.removal.Due)
	if len(settled.legacyRemoved) > 0 {
		out.events = append(out.events, statusEvent{kind: corev1.EventTypeNormal, reason: "Migrated",
			note: "removed what the original operator wrote and Picchu replaces: " + strings.Join(settled.legacyRemoved, "; ")})
	}
	out.events = orderEvents(out.events)
	out.status = rm.Status
	unavailable := len(r.c.unavailable) > 0
	out.next = nextRun(s.now, r.changed || r.moved, unavailable, r.c.judging, due, syncPeriod, alertCheck)
	out.unmoved = nextRun(s.now, false, unavailable, r.c.judging, due, syncPeriod, alertCheck)
	return out
}

// reporter gathers, build by build in the order of the snapshot, what
// report makes of the builds' reports.
type reporter struct {
	s   *snapshot
	out outcome
	c   conditionInputs
	// revisions and releasing are the status's entries of the builds,
	// and the build that releases (the first with traffic).
	revisions []picchuv1alpha1.ReleaseManagerRevisionStatus
	releasing *picchuv1alpha1.ReleasingStatus
	// due is when something a build waits for comes due, the earliest;
	// moved says a build's traffic moved other than by a ramp's step;
	// changed says a build's state changed.
	due            time.Time
	moved, changed bool
}

// add adds the report b of build inc.
func (r *reporter) add(inc *incarnation, b buildOutcome) {
	r.out.events = append(r.out.events, b.events...)
	r.out.controls = append(r.out.controls, b.controls...)
	r.changed = r.changed || b.changed || inc.recommissioned
	if b.status == nil {
		return // gone everywhere and not coming back: nothing left to record
	}
	st := *b.status
	if b.changed {
		r.out.transitions = append(r.out.transitions, transition{inc: inc, index: len(r.revisions), state: b.state})
	}
	r.addMove(inc, st)
	r.c.add(inc, b.state, rampedPercent(st))
	if st.CurrentPercent > 0 && r.releasing == nil {
		r.releasing = r.s.releasingOf(st, b.state)
	}
	r.revisions = append(r.revisions, st)
}

// addMove adds how build inc's traffic moved this run, recorded in st:
// when its ramp's next step is due (and the step it took, when it was
// due), and when the deadlines of its step and ramp come.
func (r *reporter) addMove(inc *incarnation, st picchuv1alpha1.ReleaseManagerRevisionStatus) {
	// next, the ramp's next step, is zero when traffic moved otherwise.
	next, other := r.s.moveOf(inc, st)
	if other {
		r.moved = true
	}
	r.out.stepDue = earliest(r.out.stepDue, earliest(next, inc.ramp.Due))
	if took, before := rampedPercent(st), rampedPercent(inc.status); inc.ramping && !inc.ramp.WasDue.IsZero() && took == inc.ramp.Next && took > before {
		r.out.stepsDue = append(r.out.stepsDue, inc.ramp.WasDue)
	}
	r.due = earliest(r.due, earliest(next, earliest(inc.step.Due, inc.ramp.Due)))
}

// releasingOf is the status's releasing build, st, in state: its percent,
// or while it ramps in waves, the percent of the wave that ramps, and its
// name.
func (s *snapshot) releasingOf(st picchuv1alpha1.ReleaseManagerRevisionStatus, state release.State) *picchuv1alpha1.ReleasingStatus {
	releasing := &picchuv1alpha1.ReleasingStatus{Tag: st.Tag, Percent: st.CurrentPercent}
	if state.IsRamping() && len(st.WavePercents) > 0 {
		releasing.Percent, releasing.Wave = rampedPercent(st), s.waveName(int(st.Wave))
	}
	return releasing
}

// orderEvents puts state changes first, then warnings, each in the order
// of the builds, and merges those that repeat (mergeEvents).
func orderEvents(events []statusEvent) []statusEvent {
	slices.SortStableFunc(events, func(a, b statusEvent) int {
		return cmp.Compare(eventOrder(a.kind), eventOrder(b.kind))
	})
	return mergeEvents(events)
}

// moveOf says how build inc's traffic moved this run, as recorded in st:
// when its ramp's next step is due, when it took a step of its ramp with
// one more to come; other when it moved otherwise (in waves, up but not
// by its ramp's step or to its last, down to nothing), which runs the
// ReleaseManager again at once: what comes next may be due now (a build
// released, or left with no traffic, retires or fails). A build whose
// traffic went down, not to nothing, moves on with the ramping build's
// steps. A run after a step would only find the next one not yet due: it
// costs a run per step, and a wait in the queue, for nothing.
func (s *snapshot) moveOf(inc *incarnation, st picchuv1alpha1.ReleaseManagerRevisionStatus) (next time.Time, other bool) {
	took, before := st.CurrentPercent, inc.status.CurrentPercent
	switch {
	case took == before && slices.Equal(st.WavePercents, inc.status.WavePercents):
		return time.Time{}, false
	case s.waveCount() > 1:
		return time.Time{}, true
	case took < before && took > 0 && !inc.ramping:
		return time.Time{}, false
	case inc.ramping && inc.target != nil && took == inc.ramp.Next && took > before && took < release.MaxPercent(inc.target.Release):
		// Due a delay after the step was stamped: once every cluster had it.
		return stampOf(st.LastUpdated).Add(release.StepDelay(inc.target.Release)), false
	}
	return time.Time{}, true
}

// reportConditions sets the ReleaseManager's conditions, and returns when
// the builds they hold go on, at the earliest (zero when none are held).
func (s *snapshot) reportConditions(rm *picchuv1alpha1.ReleaseManager, c conditionInputs, externalSecretsMissing []string) time.Time {
	var due time.Time
	setConditions(rm, c)
	setAlertsCondition(rm, c.judging, s.alertProblems)
	setEvidenceCondition(rm, s.noEvidence)
	setOrphanedCondition(rm, s, rm.Status.Revisions)
	setFrozenCondition(rm, s.fleet)
	setPlatformsCondition(rm, s, s.inspecting)
	setPreflightCondition(rm, s)
	if lines, _ := s.preflightFailures(); len(lines) > 0 {
		// Held builds are checked again on a backoff; a node added, or a
		// change of its room, runs them sooner.
		due = earliest(due, s.preflightRetry())
	}
	for _, fc := range s.fleet {
		if fc.freeze.Open {
			// Held builds go on when the freeze closes.
			due = earliest(due, fc.freeze.Until)
		}
	}
	setExternalSecretsCondition(rm, s.copiesExternalSecrets(), externalSecretsMissing)
	return due
}

// maxEventNote is the API server's limit on an event's note, in bytes.
const maxEventNote = 1024

// mergeEvents makes one event of the events of a kind and reason, their
// notes joined in order ("v2 releasing → released; v1 released →
// retiring"). The event recorder counts events of the same kind, reason
// and object version as one series and keeps only the first one's note:
// two builds' state changes in one run would lose the second otherwise.
// One event per reason is also one write instead of several.
func mergeEvents(events []statusEvent) []statusEvent {
	out := make([]statusEvent, 0, len(events))
	at := map[[2]string]int{}
	for _, e := range events {
		key := [2]string{e.kind, e.reason}
		if i, ok := at[key]; ok {
			out[i].note = joinNote(out[i].note, e.note)
			continue
		}
		at[key] = len(out)
		out = append(out, e)
	}
	for i := range out {
		out[i].note = truncate(out[i].note, maxEventNote)
	}
	return out
}

// eventOrder puts normal events before warnings.
func eventOrder(kind string) int {
	if kind == corev1.EventTypeWarning {
		return 1
	}
	return 0
}

// nextRun is how soon to run again: at once after a change, else when the
// earliest due time comes, and sooner while a cluster was not synced
// (clusterRetry) or builds are judged (alertCheck), at the latest after
// syncPeriod.
func nextRun(now time.Time, changed, unavailable, judging bool, due time.Time, syncPeriod, alertCheck time.Duration) time.Duration {
	if changed {
		return again
	}
	next := syncPeriod
	if unavailable {
		next = min(next, clusterRetry)
	}
	if judging {
		// Builds being judged have their alerts read again soon.
		next = min(next, alertCheck)
	}
	if !due.IsZero() {
		next = min(next, max(due.Sub(now), again))
	}
	return next
}

// earliest is the earlier of two times, a zero time being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// sameStatus says two statuses would be written the same. It compares what
// would be sent, so timestamps compare to the microsecond they are stored with.
func sameStatus(a, b *picchuv1alpha1.ReleaseManagerStatus) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// rampedPercent is the traffic a build takes where it ramps: in the
// clusters of its wave, while its target releases in waves.
func rampedPercent(st picchuv1alpha1.ReleaseManagerRevisionStatus) int32 {
	if w := int(st.Wave); w < len(st.WavePercents) {
		return st.WavePercents[w]
	}
	return st.CurrentPercent
}
