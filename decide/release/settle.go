package release

// Applied says where the actions of a run were carried out, for one build.
type Applied struct {
	// FleetLive: every live cluster took the run's changes to the app
	// (routing, shared objects); false when no cluster is live.
	FleetLive bool
	// Live: FleetLive, and the build's own objects are on every live
	// cluster.
	Live bool
	// All: the app's and the build's objects are on every cluster of the
	// fleet, live or not, as a deletion needs.
	All bool
	// SomeLive: at least one live cluster took the run's changes to the app.
	SomeLive bool
	// Rollback: the run takes traffic from a failing build (RollingBack).
	Rollback bool
}

// Settle is the state and the traffic weight to record for a build once
// its step's action ran where a says. The step's Then state is reached
// only when the action is done: on every live cluster, or on every cluster
// for a deletion; until it is, a step with an Unfinished state records
// that one (the caller keeps the weights recorded before, Unsettled). A weight counts only once every live cluster has it:
// until then the record keeps the weight recorded before (recorded), so no
// ramp step is counted as taken, and none is shortened, while a live
// cluster lags. A rollback is the exception: traffic leaving a failing
// build counts once some live cluster has it, so the rollback goes on, at
// its pace, in every cluster that answers, and a cluster that did not
// answer takes the fleet's weights, lower for the failing build, as soon
// as it does.
func Settle(step Step, a Applied, weight, recorded int32) (State, int32) {
	state := step.State
	done := a.Live
	if step.Action == Delete {
		done = a.All
	}
	switch {
	case step.Then != "" && done:
		state = step.Then
	case step.Unfinished != "" && !done:
		state = step.Unfinished
	}
	if !a.FleetLive && !(a.Rollback && a.SomeLive) {
		weight = recorded
	}
	return state, weight
}

// Unsettled says a build's step settled back on its Unfinished state:
// the run's weights do not count for it, in any wave, and what was
// recorded before stays.
func Unsettled(step Step, state State) bool {
	return step.Unfinished != "" && state == step.Unfinished && state != step.State
}
