package releasemanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/applier"
	"github.com/medium/picchu/controllers/release"
)

// Reasons of a ReleaseManager's conditions.
const (
	ReasonSynced              = "Synced"
	ReasonProgressing         = "Progressing"
	ReasonClustersUnavailable = "ClustersUnavailable"
	ReasonTimedOut            = "TimedOut"
	ReasonUnknownState        = "UnknownState"
	ReasonAlertsObserved      = "AlertsObserved"
	ReasonAlertsUnavailable   = "AlertsUnavailable"
	ReasonServing             = "Serving"
	ReasonRemovalPending      = "RemovalPending"
)

// again is how soon a ReleaseManager runs again after a state change, so
// the next state's work starts at once.
const again = 10 * time.Millisecond

// clusterRetry is how soon a ReleaseManager tries again, at the latest, a
// cluster it could not update (sooner when a step is due).
const clusterRetry = 10 * time.Second

// record writes the outcome of a run into the ReleaseManager's status (only
// when it changed), emits an event per state change and says when to run again.
func (r *Reconciler) record(ctx context.Context, s *snapshot, results applier.Results) (ctrl.Result, error) {
	rm := s.rm
	before := rm.Status.DeepCopy()
	failed := map[string]string{}
	// The errors of clusters where only some builds failed: the app's
	// routing and the other builds are synced there.
	buildsFailed := map[string]map[string]error{}
	for _, res := range results {
		if res.Err != nil {
			failed[res.Cluster] = res.Err.Error()
			if builds, only := buildErrors(res.Err); only {
				buildsFailed[res.Cluster] = builds
			}
		}
	}
	// An action is done when it succeeded on every cluster it must reach:
	// the live ones for a sync, all of them for a deletion.
	syncedLive, syncedAll := true, true
	rm.Status.Clusters = rm.Status.Clusters[:0]
	var unavailable []string
	for _, fc := range s.fleet {
		cs := picchuv1alpha1.ReleaseManagerClusterStatus{Name: fc.obj.Name, Live: fc.live, Synced: true}
		if fc.plans == nil {
			cs.Synced, cs.Message = false, fc.problem
		} else if msg, ok := failed[fc.obj.Name]; ok {
			cs.Synced, cs.Message = false, msg
		}
		if !cs.Synced {
			unavailable = append(unavailable, fc.obj.Name)
		}
		if !cs.Synced && buildsFailed[fc.obj.Name] == nil {
			syncedAll = false
			syncedLive = syncedLive && !fc.live
		}
		rm.Status.Clusters = append(rm.Status.Clusters, cs)
	}
	if s.observation.LiveClusters() == 0 {
		syncedLive = false
	}

	now := metav1.NewTime(s.now)
	var statuses []picchuv1alpha1.ReleaseManagerRevisionStatus
	var changed, progressing, timedOut []string
	var unknown []string
	var warnings []warning
	judging := false
	due := time.Time{}
	moved := false
	rm.Status.Releasing = nil
	for _, inc := range s.incarnations {
		if inc.step.Drop {
			continue
		}
		state := inc.step.State
		rejected, buildSynced := s.buildSynced(inc, buildsFailed)
		done := syncedLive && buildSynced.live
		if inc.step.Action == release.Delete {
			done = syncedAll && buildSynced.all
		}
		if inc.step.Then != "" && done {
			state = inc.step.Then
		}
		if !syncedLive {
			// Traffic moved only where clusters could be reached: the
			// record keeps the old weights, so no step is counted as
			// taken, and so none is shortened, until every live cluster has it.
			inc.weight = inc.status.CurrentPercent
		}
		if state == release.Deleted && inc.revision == nil {
			// Gone everywhere and not coming back: nothing left to record.
			changed = append(changed, fmt.Sprintf("%s %s → %s", inc.tag, inc.status.State.Current, state))
			continue
		}
		st := incarnationStatus(inc, state, s.now, s.observation)
		if rejected != "" && st.Rejected == "" && inc.revision != nil && !inc.revision.Spec.Failed {
			warnings = append(warnings, warning{"Rejected", fmt.Sprintf("%s rejected by %s", inc.tag, rejected)})
		}
		st.Rejected = rejected
		if string(state) != inc.status.State.Current {
			changed = append(changed, fmt.Sprintf("%s %s → %s", inc.tag, displayState(inc.status.State.Current), state))
			observeLatencies(s.rm, inc, &st, state, s.now)
			switch state {
			case release.Failing:
				warnings = append(warnings, warning{"RollingBack", fmt.Sprintf(
					"%s failed; its traffic goes back to the previous release on every cluster", inc.tag)})
			case release.Failed:
				warnings = append(warnings, warning{"RolledBack", fmt.Sprintf("%s failed and was rolled back", inc.tag)})
			}
		}
		if inc.verdict == release.Firing {
			// Once seen firing while judged, the alerts stay on record:
			// the Revision controller fails the build from them.
			before := len(st.TriggeredAlerts)
			st.TriggeredAlerts = union(st.TriggeredAlerts, inc.firing)
			if len(st.TriggeredAlerts) != before {
				warnings = append(warnings, warning{"AlertsFiring", fmt.Sprintf(
					"%s: %s firing before it proved itself", inc.tag, strings.Join(inc.firing, ", "))})
			}
		}
		if inc.recommissioned {
			changed = append(changed, fmt.Sprintf("%s recommissioned: no healthy build serves", inc.tag))
		}
		moved = moved || st.CurrentPercent != inc.status.CurrentPercent
		switch {
		case inc.step.Unknown:
			unknown = append(unknown, fmt.Sprintf("%s is in %q", inc.tag, state))
		case state == release.TimingOut:
			timedOut = append(timedOut, inc.tag)
		case state.IsInProgress():
			msg := fmt.Sprintf("%s %s", inc.tag, state)
			switch {
			case inc.verdict == release.Firing:
				msg += fmt.Sprintf(" (held: %s firing)", strings.Join(inc.firing, ", "))
			case inc.verdict == release.Unobserved:
				msg += " (held: its alerts cannot be read)"
			case inc.ramping && inc.ramp.Waiting != "":
				msg += fmt.Sprintf(" %d%% (waiting for %s)", st.CurrentPercent, inc.ramp.Waiting)
			}
			progressing = append(progressing, msg)
		}
		judging = judging || inc.verdict != release.Unjudged
		for _, d := range []time.Time{inc.step.Due, inc.ramp.Due} {
			if !d.IsZero() && (due.IsZero() || d.Before(due)) {
				due = d
			}
		}
		if st.CurrentPercent > 0 && rm.Status.Releasing == nil {
			rm.Status.Releasing = &picchuv1alpha1.ReleasingStatus{Tag: st.Tag, Percent: st.CurrentPercent}
		}
		statuses = append(statuses, st)
	}
	rm.Status.Revisions = statuses
	rm.Status.ObservedGeneration = rm.Generation
	setConditions(rm, unavailable, progressing, timedOut, unknown)
	setAlertsCondition(rm, judging, s.alertProblems)
	setOrphanedCondition(rm, s, statuses)
	if d := s.removal.Due; !d.IsZero() && (due.IsZero() || d.Before(due)) {
		due = d
	}

	var err error
	if !sameStatus(before, &rm.Status) {
		rm.Status.LastUpdated = &now
		if err = r.Client.Status().Update(ctx, rm); apierrors.IsConflict(err) {
			// Someone else changed the ReleaseManager: decide again from it.
			ctrl.LoggerFrom(ctx).V(1).Info("status changed meanwhile; running again")
			return ctrl.Result{RequeueAfter: again}, nil
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status of release manager %s/%s: %w", rm.Namespace, rm.Name, err)
		}
	}
	if r.Recorder != nil {
		for _, c := range changed {
			r.Recorder.Eventf(rm, nil, corev1.EventTypeNormal, "StateChanged", "Release", "%s", c)
		}
		for _, w := range warnings {
			r.Recorder.Eventf(rm, nil, corev1.EventTypeWarning, w.reason, "Release", "%s", w.note)
		}
	}
	// A cluster's failure is in its status and the conditions, not an
	// error: an error's backoff would throw away the due time below and
	// let step deadlines and alert checks slip by minutes.
	recordMetrics(rm, statuses, s.now)
	if len(changed) > 0 || moved {
		return ctrl.Result{RequeueAfter: again}, nil
	}
	next := r.SyncPeriod
	if len(unavailable) > 0 {
		next = min(next, clusterRetry)
	}
	if judging {
		// Builds being judged have their alerts read again soon.
		next = min(next, r.AlertCheckInterval)
	}
	if !due.IsZero() {
		next = min(next, max(due.Sub(s.now), again))
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func displayState(s string) string {
	if s == "" {
		return "new"
	}
	return s
}

// incarnationStatus is the recorded status of a build after this run.
func incarnationStatus(inc *incarnation, state release.State, at time.Time, obs release.Observation) picchuv1alpha1.ReleaseManagerRevisionStatus {
	now := picchuv1alpha1.NewTimestamp(at)
	st := *inc.status.DeepCopy()
	st.Tag = inc.tag
	if string(state) != st.State.Current {
		st.State.Current = string(state)
		st.State.LastUpdated = &now
		switch state {
		case release.Deploying:
			st.DeployingStartTimestamp = &now
		case release.PendingRelease:
			st.PendingReleaseStartTimestamp = &now
		case release.Releasing:
			st.ReleaseStartTimestamp = &now
		}
	}
	st.State.Target = string(state)
	if inc.weight != st.CurrentPercent {
		st.CurrentPercent = inc.weight
		st.LastUpdated = &now
	}
	if state == release.Canarying && st.CurrentPercent > 0 && st.CanaryStartTimestamp == nil {
		st.CanaryStartTimestamp = &now
	}
	st.ReleaseEligible = inc.eligible
	st.PeakPercent = max(inc.peak, st.CurrentPercent)
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
			st.ReleaseEligible = inc.target.Release.Eligible
			st.TTL = inc.target.Release.TTL
		}
	}
	live := obs.Live(inc.tag)
	st.Scale.Current = live.Available
	st.Scale.Desired = live.Desired
	st.Scale.Peak = max(st.Scale.Peak, live.Available)
	return st
}

// setConditions sets Ready, Reconciling and Stalled in the kstatus style.
func setConditions(rm *picchuv1alpha1.ReleaseManager, unavailable, progressing, timedOut, unknown []string) {
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: rm.Generation,
		})
	}
	switch {
	case len(unknown) > 0:
		msg := "held: " + strings.Join(unknown, ", ") + ", a state this version of Picchu does not handle"
		set(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, ReasonUnknownState, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonUnknownState, msg)
	case len(timedOut) > 0:
		msg := "timed out: " + strings.Join(timedOut, ", ")
		set(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, ReasonTimedOut, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonTimedOut, msg)
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
	}
	switch {
	case len(unavailable) > 0:
		msg := "not synced on " + strings.Join(unavailable, ", ")
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, ReasonClustersUnavailable, msg)
		if len(unknown) == 0 && len(timedOut) == 0 {
			set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonClustersUnavailable, msg)
		}
	case len(progressing) > 0:
		msg := strings.Join(progressing, ", ")
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, ReasonProgressing, msg)
		if len(unknown) == 0 && len(timedOut) == 0 {
			set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, ReasonProgressing, msg)
		}
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionReconciling)
		if len(unknown) == 0 && len(timedOut) == 0 {
			set(picchuv1alpha1.ConditionReady, metav1.ConditionTrue, ReasonSynced, "every build is in its state on every cluster")
		}
	}
}

// warning is a warning event to emit once the status is written.
type warning struct{ reason, note string }

// union is the sorted union of two sets of names.
func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// setOrphanedCondition sets Orphaned while no Revision targets the app in
// the target, saying what keeps the app on its clusters, and removes it
// once there is one again.
func setOrphanedCondition(rm *picchuv1alpha1.ReleaseManager, s *snapshot, statuses []picchuv1alpha1.ReleaseManagerRevisionStatus) {
	if s.orphanedSince.IsZero() {
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionOrphaned)
		return
	}
	msg := fmt.Sprintf("no Revision of %s targets %s", rm.Spec.App, rm.Spec.Target)
	reason := ReasonRemovalPending
	if s.removal.HeldByTraffic {
		reason = ReasonServing
		var serving []string
		for _, st := range statuses {
			if st.CurrentPercent > 0 {
				serving = append(serving, fmt.Sprintf("%s %d%%", st.Tag, st.CurrentPercent))
			}
		}
		msg += fmt.Sprintf("; %s keeps serving, so the app stays on every cluster until ReleaseManager %s is deleted",
			strings.Join(serving, ", "), rm.Name)
	} else {
		msg += fmt.Sprintf("; the app is removed from every cluster at %s unless a Revision comes back",
			s.removal.Due.UTC().Format(time.RFC3339))
	}
	meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionOrphaned, Status: metav1.ConditionTrue, Reason: reason, Message: msg,
		ObservedGeneration: rm.Generation, LastTransitionTime: metav1.NewTime(s.orphanedSince),
	})
}

// setAlertsCondition sets AlertsObserved while builds are judged: True when
// every alert check ran, False (promotion held) naming the checks that
// could not. It is removed when no build is judged.
func setAlertsCondition(rm *picchuv1alpha1.ReleaseManager, judging bool, problems []string) {
	switch {
	case len(problems) > 0:
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionAlertsObserved, Status: metav1.ConditionFalse, Reason: ReasonAlertsUnavailable,
			Message:            "promotion held: " + strings.Join(problems, "; "),
			ObservedGeneration: rm.Generation,
		})
	case judging:
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionAlertsObserved, Status: metav1.ConditionTrue, Reason: ReasonAlertsObserved,
			Message: "the alerts of every build being judged were read", ObservedGeneration: rm.Generation,
		})
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionAlertsObserved)
	}
}

// sameStatus says two statuses would be written the same. It compares what
// would be sent, so timestamps compare to the microsecond they are stored with.
func sameStatus(a, b *picchuv1alpha1.ReleaseManagerStatus) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// synced says whether a build's objects were applied on the live clusters
// and on all of them.
type synced struct{ live, all bool }

// buildSynced says whether inc's own objects were applied, given the
// clusters where some builds failed, and why a live cluster rejected them
// as invalid, if one did. A failing build's invalid objects do not keep it
// from failed: the cluster will never take them, and its traffic is gone.
func (s *snapshot) buildSynced(inc *incarnation, buildsFailed map[string]map[string]error) (rejected string, out synced) {
	out = synced{live: true, all: true}
	for _, fc := range s.fleet {
		err := buildsFailed[fc.obj.Name][inc.tag]
		if err == nil {
			continue
		}
		invalid := apierrors.IsInvalid(err)
		if invalid && fc.live && rejected == "" {
			rejected = fc.obj.Name + ": " + apiMessage(err)
		}
		if invalid && inc.step.Then == release.Failed {
			continue
		}
		out.all = false
		out.live = out.live && !fc.live
	}
	return rejected, out
}

// apiMessage is the API server's message of err, or err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}
