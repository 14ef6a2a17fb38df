package releasemanager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/querycache"
	"github.com/medium/picchu/integrations/scope"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/releasemetrics"
)

// AlertSource answers which SLO and canary alerts fire for a build of an
// app: Prometheus (package prometheus) or Datadog (package datadog). Only
// the app's own alerts count: those of its namespace and fleet (scope.App).
// canaryOnly asks for canary alerts only (the Revision's canaryWithSLIRules).
type AlertSource interface {
	FiringAlerts(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]string, error)
}

// TrafficSource says which of a build's SLO total metrics counted none of
// its requests (package prometheus).
type TrafficSource interface {
	Unreached(ctx context.Context, app scope.App, tag string, metrics []string) ([]string, error)
}

// GroupSource says which of an app's monitors have groups but none for a
// build (package datadog).
type GroupSource interface {
	Ungrouped(ctx context.Context, app scope.App, tag string, canaryOnly bool) ([]string, error)
}

// errNoDatadog is the error of a build that asks for Datadog checks when
// the operator has no Datadog client configured.
var errNoDatadog = errors.New("the revision enables datadogMonitoring but Picchu runs without Datadog credentials (--datadog-secret)")

// judged says a build's alerts are checked this run: it canaries or is
// being released (until it is released and watched, release.Judged), or
// its deploy finishes this run into a judged state (passesToJudged), is
// neither failed nor ignoring its SLOs, and, with --slo-proven-percent, has
// not proven itself by its peak.
func (s *snapshot) judged(inc *incarnation, provenPercent int32, t release.Timeouts, cal *schedule.Calendar) bool {
	if inc.exempt() {
		return false
	}
	switch state := release.State(inc.status.State.Current); {
	case state.IsJudged():
		in := release.JudgeInput{State: state, Since: stampOf(inc.status.State.LastUpdated), Now: s.now}
		if inc.target != nil {
			in.Watch = release.WatchOf(inc.target.Release)
		}
		if !release.Judged(in) {
			return false
		}
	case !s.passesToJudged(inc, t, cal):
		return false
	}
	// With --slo-proven-percent, a build is proven by its peak, as in the
	// original; without, it is judged until released.
	return provenPercent <= 0 || !release.Proven(s.targetPeaks(inc), provenPercent)
}

// passesToJudged says a build's deploy finishes this run and the run
// takes it on to a judged state (release.Advance, nothing refused):
// its alerts are checked in this run, as the run of that state would have
// checked them, so that it may go on (incarnation.mayEnter). A build
// that stays deployed (not eligible, a freeze, pre-flight checks, an
// external test) is judged once it enters such a state, as before.
func (s *snapshot) passesToJudged(inc *incarnation, t release.Timeouts, cal *schedule.Calendar) bool {
	if release.State(inc.status.State.Current) != release.Deploying || inc.target == nil {
		return false
	}
	f := s.facts(inc, cal)
	if f.Deployment != release.IsDeployed {
		return false
	}
	step, passed := release.Advance(f, t, nil)
	return step.State.IsJudged() || slices.ContainsFunc(passed, release.State.IsJudged)
}

// targetPeaks are the build's targets with their peaks and whether they
// have waves left: this target's from the ReleaseManager's own record, the
// others' as the Revision mirrors them. With waves of clusters left, a build
// is not proven: its alerts must stay clear through each wave's bake.
func (s *snapshot) targetPeaks(inc *incarnation) []release.TargetPeak {
	out := make([]release.TargetPeak, 0, len(inc.revision.Spec.Targets))
	for _, t := range inc.revision.Spec.Targets {
		tp := release.TargetPeak{Name: t.Name, Acceptance: t.AcceptanceTarget}
		if t.Name == s.rm.Spec.Target {
			tp.Peak, tp.WavesLeft = inc.status.PeakPercent, s.wavesLeft(inc)
		} else {
			for _, ts := range inc.revision.Status.Targets {
				if ts.Name == t.Name {
					tp.Peak, tp.WavesLeft = ts.Release.PeakPercent, ts.Release.WavesLeft
				}
			}
		}
		out = append(out, tp)
	}
	return out
}

// sources are the alert sources that judge a build: Datadog when its
// target enables datadogMonitoring (and Prometheus too with
// withPrometheus), otherwise Prometheus, when the target has alerts there
// (an enabled SLO or an alert rule), so that a Prometheus outage does not
// hold apps it has nothing to say about. A nil Datadog source stands for
// one that is asked for but not configured.
func (r *Reconciler) sources(target *picchuv1alpha1.RevisionTarget) (srcs []namedSource) {
	dd := target.DatadogMonitoring
	if !dd.Enabled || dd.WithPrometheus {
		if r.Prometheus != nil && hasPrometheusAlerts(target) {
			srcs = append(srcs, namedSource{"Prometheus", r.Prometheus})
		}
	}
	if dd.Enabled {
		srcs = append(srcs, namedSource{"Datadog", r.Datadog})
	}
	return srcs
}

// hasPrometheusAlerts says the target defines alerts Prometheus evaluates.
func hasPrometheusAlerts(target *picchuv1alpha1.RevisionTarget) bool {
	if len(target.AlertRules) > 0 {
		return true
	}
	for _, slo := range target.ServiceLevelObjectives {
		if slo.Enabled {
			return true
		}
	}
	return false
}

type namedSource struct {
	name string
	src  AlertSource
}

// judge checks the alerts of every judged build and records the verdicts
// in the snapshot; problems says which checks could not run. A build is
// judged on answers asked since it entered its state (querycache.NotBefore),
// never on ones the sources kept from before: a build retried after a
// false positive starts its judgment over.
func (r *Reconciler) judge(ctx context.Context, s *snapshot) {
	for _, inc := range s.incarnations {
		if !s.judged(inc, r.ProvenPercent, r.Timeouts, r.Calendar) {
			continue
		}
		srcs := r.sources(inc.target)
		if len(srcs) == 0 {
			continue
		}
		ctx := sinceEntered(ctx, inc)
		inc.verdict = release.Healthy
		firing, problems := s.askSources(ctx, inc, srcs)
		slices.Sort(firing)
		inc.firing = slices.Compact(firing)
		switch {
		case len(inc.firing) > 0:
			// Firing alerts fail the build even when another source is down.
			inc.verdict = release.Firing
		case len(problems) > 0:
			inc.verdict = release.Unobserved
			s.alertProblems = append(s.alertProblems, fmt.Sprintf("%s: %s", inc.tag, strings.Join(problems, "; ")))
		default:
			r.checkEvidence(ctx, s, inc, srcs)
		}
		if inc.verdict == release.Healthy {
			r.compareBaselines(ctx, s, inc, srcs)
		}
	}
}

// askSources asks every alert source of inc which of its alerts fire, and
// returns them (unsorted) and the problems of the sources that could not
// tell; Prometheus' alerts also say, by cluster, where they fire.
func (s *snapshot) askSources(ctx context.Context, inc *incarnation, srcs []namedSource) (firing, problems []string) {
	canaryOnly := inc.revision.Spec.CanaryWithSLIRules
	for _, ns := range srcs {
		var alerts []string
		var err error
		switch src := ns.src.(type) {
		case nil:
			err = errNoDatadog
		case ClusterAlertSource:
			var named []prometheus.Alert
			if named, err = src.FiringAlertsIn(ctx, s.appScope(), inc.tag, canaryOnly); err == nil {
				s.firingIn(inc, named)
				for _, a := range named {
					alerts = append(alerts, a.Name)
				}
			}
		default:
			alerts, err = src.FiringAlerts(ctx, s.appScope(), inc.tag, canaryOnly)
		}
		if err != nil {
			releasemetrics.AlertCheck(ns.name, "error")
			problems = append(problems, fmt.Sprintf("%s: %v", ns.name, err))
			continue
		}
		outcome := "clear"
		if len(alerts) > 0 {
			outcome = "firing"
		}
		releasemetrics.AlertCheck(ns.name, outcome)
		firing = append(firing, alerts...)
	}
	return firing, problems
}

// sinceEntered is ctx asking the alert sources for answers fetched since
// inc entered its state.
func sinceEntered(ctx context.Context, inc *incarnation) context.Context {
	if entered := inc.status.State.LastUpdated; entered != nil {
		return querycache.NotBefore(ctx, entered.Time)
	}
	return ctx
}

// exempt says no alert check applies to the build: its Revision is gone,
// failed, or ignores its SLOs.
func (inc *incarnation) exempt() bool {
	return inc.revision == nil || inc.revision.Spec.Failed || inc.revision.Spec.IgnoreSLOs
}

// markUnjudgeable marks the builds no alert check could ever apply to:
// exempt, or with no alert source for their target.
func (r *Reconciler) markUnjudgeable(s *snapshot) {
	for _, inc := range s.incarnations {
		inc.unjudgeable = inc.exempt() || len(r.sources(inc.target)) == 0
	}
}

// sloMetrics are the recorded totals of the target's enabled SLOs.
func sloMetrics(app string, target *picchuv1alpha1.RevisionTarget) []string {
	var out []string
	for _, slo := range target.ServiceLevelObjectives {
		if slo.Enabled && slo.ServiceLevelIndicator.TotalQuery != "" {
			out = append(out, manifests.SLOMetric(app, slo.Name, "total"))
		}
	}
	return out
}
