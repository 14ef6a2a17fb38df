package releasemanager

import (
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/releasemetrics"
)

// observeLatencies observes, once per build, the latencies of reaching
// state, remembering them in the build's status.metrics.
func observeLatencies(rm *picchuv1alpha1.ReleaseManager, inc *incarnation, st *picchuv1alpha1.ReleaseManagerRevisionStatus, state release.State, now time.Time) {
	b := releasemetrics.Build{
		GitTime:        timeOf(st.GitTimestamp),
		RevisionTime:   timeOf(st.RevisionTimestamp),
		DeployingStart: stampOf(st.DeployingStartTimestamp),
		CanaryStart:    stampOf(st.CanaryStartTimestamp),
		ReleaseStart:   stampOf(st.ReleaseStartTimestamp),
		Metrics:        &st.Metrics,
	}
	app, target := rm.Spec.App, rm.Spec.Target
	releasemetrics.ObserveCreated(app, target, b)
	phase, ok := latencyPhases[state]
	if !ok {
		return
	}
	// The rollback took from entering failing to its traffic being gone.
	if state.IsRolledBack() && release.State(inc.status.State.Current).IsRollingBack() {
		b.FailingStart = stampOf(inc.status.State.LastUpdated)
	}
	releasemetrics.Observe(app, target, phase, now, b)
}

// latencyPhases are the states whose reaching is observed as a latency,
// each with its phase.
var latencyPhases = map[release.State]releasemetrics.Phase{
	release.Deployed:       releasemetrics.PhaseDeployed,
	release.Canaried:       releasemetrics.PhaseCanaried,
	release.PendingRelease: releasemetrics.PhasePendingRelease,
	release.Released:       releasemetrics.PhaseReleased,
	release.Failed:         releasemetrics.PhaseRolledBack,
}

// recordMetrics sets the gauges of the ReleaseManager's builds.
func recordMetrics(rm *picchuv1alpha1.ReleaseManager, statuses []picchuv1alpha1.ReleaseManagerRevisionStatus, now time.Time) {
	weights := make(map[string]int32, len(statuses))
	clusters := map[[2]string]int32{}
	counts := map[string]int{}
	oldest := map[string]releasemetrics.Oldest{}
	for _, st := range statuses {
		weights[st.Tag] = st.CurrentPercent
		for _, c := range st.Clusters {
			clusters[[2]string{st.Tag, c.Name}] = c.Percent
		}
		state := st.State.Current
		counts[state]++
		if t := timeOf(st.RevisionTimestamp); !t.IsZero() {
			// The oldest build of the state names the series; of two as
			// old, the first tag, so that the series does not flap.
			age, cur := now.Sub(t), oldest[state]
			if _, seen := oldest[state]; !seen || age > cur.Age || (age == cur.Age && st.Tag < cur.Tag) {
				oldest[state] = releasemetrics.Oldest{Tag: st.Tag, Age: age}
			}
		}
	}
	releasemetrics.SetWeights(rm.Spec.App, rm.Spec.Target, weights)
	releasemetrics.SetClusterWeights(rm.Spec.App, rm.Spec.Target, clusters)
	releasemetrics.SetStates(rm.Spec.App, rm.Spec.Target, counts, oldest)
}
