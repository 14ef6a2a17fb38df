package releasemanager

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// conditionInputs gathers, build by build, what the conditions say.
type conditionInputs struct {
	unavailable, progressing, timedOut, unknown []string
	// notOwned are the objects of the app, on clusters, that exist and are
	// not Picchu's: the app holds there until a person acts.
	notOwned []string
	// hostsRefused are the ports' hosts, on clusters, that the cluster's
	// ingress may not route: the app's routes hold there until a person acts.
	hostsRefused []string
	judging      bool
}

// add counts a build in state, at weight percent.
func (c *conditionInputs) add(inc *incarnation, state release.State, weight int32) {
	switch {
	case inc.step.Unknown:
		c.unknown = append(c.unknown, fmt.Sprintf("%s is in %q", inc.tag, state))
	case state.IsTimedOut():
		c.timedOut = append(c.timedOut, inc.tag)
	case state.IsInProgress():
		msg := fmt.Sprintf("%s %s", inc.tag, state)
		switch {
		case inc.verdict == release.Firing:
			msg += fmt.Sprintf(" (held: %s firing)", strings.Join(inc.firing, ", "))
		case inc.verdict == release.Unobserved:
			msg += " (held: its alerts cannot be read)"
		case inc.ramping && inc.ramp.Waiting != "":
			msg += fmt.Sprintf(" %d%% (waiting for %s)", weight, inc.ramp.Waiting)
		}
		c.progressing = append(c.progressing, msg)
	}
	c.judging = c.judging || inc.verdict != release.Unjudged
}

// setConditions sets Ready, Reconciling and Stalled in the kstatus style.
// Stalled, when true, also says why Ready is false.
func setConditions(rm *picchuv1alpha1.ReleaseManager, c conditionInputs) {
	set := func(t string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: rm.Generation,
		})
	}
	stalled := func(reason, msg string) {
		set(picchuv1alpha1.ConditionStalled, metav1.ConditionTrue, reason, msg)
		set(picchuv1alpha1.ConditionReady, metav1.ConditionFalse, reason, msg)
	}
	switch {
	case len(c.unknown) > 0:
		stalled(picchuv1alpha1.ReasonUnknownState, "held: "+strings.Join(c.unknown, ", ")+", a state this version of Picchu does not handle")
	case len(c.timedOut) > 0:
		stalled(picchuv1alpha1.ReasonTimedOut, "timed out: "+strings.Join(c.timedOut, ", "))
	case len(c.notOwned) > 0:
		stalled(picchuv1alpha1.ReasonNotOwned, truncate("held: "+strings.Join(c.notOwned, "; "), maxStalledMessage))
	case len(c.hostsRefused) > 0:
		stalled(picchuv1alpha1.ReasonHostNotAllowed, truncate("routes held: "+strings.Join(c.hostsRefused, "; "), maxStalledMessage))
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
	}
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		if !meta.IsStatusConditionTrue(rm.Status.Conditions, picchuv1alpha1.ConditionStalled) {
			set(picchuv1alpha1.ConditionReady, status, reason, msg)
		}
	}
	switch {
	case len(c.unavailable) > 0:
		msg := "not synced on " + strings.Join(c.unavailable, ", ")
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonClustersUnavailable, msg)
		ready(metav1.ConditionFalse, picchuv1alpha1.ReasonClustersUnavailable, msg)
	case len(c.progressing) > 0:
		msg := strings.Join(c.progressing, ", ")
		set(picchuv1alpha1.ConditionReconciling, metav1.ConditionTrue, picchuv1alpha1.ReasonProgressing, msg)
		ready(metav1.ConditionFalse, picchuv1alpha1.ReasonProgressing, msg)
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionReconciling)
		ready(metav1.ConditionTrue, picchuv1alpha1.ReasonSynced, "every build is in its state on every cluster")
	}
}

// maxStalledMessage bounds a Stalled message made of clusters' errors: the
// Revisions that mirror it keep it under their schema's bound.
const maxStalledMessage = 2048

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "…"
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
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
	reason := picchuv1alpha1.ReasonRemovalPending
	if s.removal.HeldByTraffic {
		reason = picchuv1alpha1.ReasonServing
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
			Type: picchuv1alpha1.ConditionAlertsObserved, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonAlertsUnavailable,
			Message:            "promotion held: " + strings.Join(problems, "; "),
			ObservedGeneration: rm.Generation,
		})
	case judging:
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionAlertsObserved, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonAlertsObserved,
			Message: "the alerts of every build being judged were read", ObservedGeneration: rm.Generation,
		})
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionAlertsObserved)
	}
}

// setEvidenceCondition sets CanaryEvidence False while canaries that ran
// their time saw no request (each named in noEvidence), and removes it
// otherwise.
func setEvidenceCondition(rm *picchuv1alpha1.ReleaseManager, noEvidence []string) {
	if len(noEvidence) == 0 {
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		return
	}
	meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionCanaryEvidence, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonNoTraffic,
		Message:            "held: " + strings.Join(noEvidence, "; ") + " (canary.allowNoTraffic lets a build with no request pass)",
		ObservedGeneration: rm.Generation,
	})
}

// setFrozenCondition says which clusters of the fleet are in a freeze
// window and until when; the condition goes when none is.
func setFrozenCondition(rm *picchuv1alpha1.ReleaseManager, fleet []*fleetCluster) {
	var frozen []string
	for _, fc := range fleet {
		if fc.freeze.Open {
			frozen = append(frozen, fc.obj.Name+": "+fc.freeze.String())
		}
	}
	if len(frozen) == 0 {
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionFrozen)
		return
	}
	meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionFrozen, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonFreezeWindow,
		Message:            "no canary or ramp starts, and ramps hold, where a cluster is frozen: " + strings.Join(frozen, "; "),
		ObservedGeneration: rm.Generation,
	})
}
