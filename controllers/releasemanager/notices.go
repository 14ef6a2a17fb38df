package releasemanager

import (
	"slices"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/slack"
)

// Notifier is told how releases go, and must never block (package slack's
// queues the notices and posts them in the background).
type Notifier interface {
	Notify(slack.Notice) bool
}

// channelLabel is the alert label that names an app's Slack channel, as
// the original's alerts carry it.
const channelLabel = "channel"

// notices are what a run that wrote statuses (the builds' new entries),
// made transitions and acted on manual controls tells Slack: one notice
// per build whose state changed to one worth telling, one per build
// recommissioned, and one per pause, resume, promotion or retry, naming who
// asked.
func notices(s *snapshot, transitions []transition, controls []controlAction, statuses []picchuv1alpha1.ReleaseManagerRevisionStatus) []slack.Notice {
	var out []slack.Notice
	notice := func(inc *incarnation, kind slack.Kind, st *picchuv1alpha1.ReleaseManagerRevisionStatus) {
		n := slack.Notice{App: s.rm.Spec.App, Target: s.rm.Spec.Target, Tag: inc.tag, Kind: kind, Channel: channelOf(inc.target)}
		if rel := s.rm.Status.Releasing; kind == slack.Ramping && rel != nil && rel.Tag == inc.tag && rel.ForecastFinish != nil {
			n.Finish = rel.ForecastFinish.Time
		}
		if kind == slack.Failed && st != nil {
			n.Alerts = st.TriggeredAlerts
			if inc.revision != nil {
				n.Reason = inc.revision.Annotations[picchuv1alpha1.AnnotationFailedReason]
			}
		}
		out = append(out, n)
	}
	for _, tr := range transitions {
		st := &statuses[tr.index]
		// A state passed through on the way tells what reaching it tells.
		from := release.State(tr.inc.status.State.Current)
		for _, to := range tr.inc.entered(tr.state) {
			if kind, ok := noticeKind(from, to, st.PeakPercent); ok {
				notice(tr.inc, kind, st)
			}
			from = to
		}
	}
	for _, inc := range s.incarnations {
		if inc.recommissioned && !inc.rolledBackNow() {
			notice(inc, slack.Recommissioned, nil)
		}
	}
	for _, a := range controls {
		if kind, ok := controlNotices[a.action]; ok {
			notice(a.inc, kind, nil)
			out[len(out)-1].By = a.inc.control.by
		}
	}
	return out
}

// controlNotices are the notices of the manual controls Slack is told
// of, with who asked (an abort shows as the failure it is, with its reason).
var controlNotices = map[string]slack.Kind{
	"pause": slack.Paused, "resume": slack.Resumed, "promote": slack.Promoted, "retry": slack.Retried, "rollback": slack.RolledBackTo,
}

// noticeKind is what a build whose state went from one to another, having
// taken peak percent at most, tells Slack, if anything: its canary started
// or passed, its ramp started, it is released, it failed, or (once it took
// traffic) it is rolled back.
func noticeKind(from, to release.State, peak int32) (slack.Kind, bool) {
	if kind, ok := stateNotices[to]; ok {
		return kind, true
	}
	switch {
	case to.IsRamping() && !from.IsRamping():
		return slack.Ramping, true
	case to.IsRolledBack() && from.IsRollingBack() && peak > 0:
		return slack.RolledBack, true
	}
	return "", false
}

// stateNotices are the states whose reaching tells Slack, whatever the
// state before, each with its notice.
var stateNotices = map[release.State]slack.Kind{
	release.Canarying: slack.Started,
	release.Canaried:  slack.CanaryPassed,
	release.Released:  slack.Released,
	release.Failing:   slack.Failed,
}

// channelOf is the Slack channel a target's alerts name (the "channel"
// alert label of the target, else of its first SLO that has one), or
// empty for the operator's default.
func channelOf(target *picchuv1alpha1.RevisionTarget) string {
	if target == nil {
		return ""
	}
	if c := target.ServiceLevelObjectiveLabels.AlertLabels[channelLabel]; c != "" {
		return c
	}
	i := slices.IndexFunc(target.ServiceLevelObjectives, func(o picchuv1alpha1.ServiceLevelObjective) bool {
		return o.ServiceLevelObjectiveLabels.AlertLabels[channelLabel] != ""
	})
	if i < 0 {
		return ""
	}
	return target.ServiceLevelObjectives[i].ServiceLevelObjectiveLabels.AlertLabels[channelLabel]
}
