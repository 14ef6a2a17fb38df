package release

import "testing"

func TestSettle(t *testing.T) {
	everywhere := Applied{FleetLive: true, Live: true, All: true}
	liveOnly := Applied{FleetLive: true, Live: true}
	buildLagging := Applied{FleetLive: true}
	for _, tc := range []struct {
		name       string
		step       Step
		applied    Applied
		wantState  State
		wantWeight int32
		// weight and recorded are 50 and 25 unless set.
		weight, recorded int32
	}{
		{"a step without Then keeps its state", Step{State: Releasing, Action: Sync}, everywhere, Releasing, 50, 0, 0},
		{"a sync done on every live cluster reaches Then", Step{State: Deploying, Action: Sync, Then: Deployed}, liveOnly, Deployed, 50, 0, 0},
		{"a sync not done on a live cluster stays", Step{State: Deploying, Action: Sync, Then: Deployed}, buildLagging, Deploying, 50, 0, 0},
		{"a retirement done on every live cluster reaches Then", Step{State: Retiring, Action: Retire, Then: Retired}, liveOnly, Retired, 50, 0, 0},
		{"a deletion waits for every cluster, live or not", Step{State: Deleting, Action: Delete, Then: Deleted}, liveOnly, Deleting, 50, 0, 0},
		{"a deletion done everywhere reaches Then", Step{State: Deleting, Action: Delete, Then: Deleted}, everywhere, Deleted, 50, 0, 0},
		{"a weight no live cluster has is not recorded", Step{State: Releasing, Action: Sync}, Applied{}, Releasing, 25, 0, 0},
		{"a rollback no live cluster took keeps its state and old weight", Step{State: Failing, Action: Sync, Then: Failed}, Applied{}, Failing, 25, 0, 0},
		{"a build whose own objects lag still records the fleet's weight", Step{State: Releasing, Action: Sync}, buildLagging, Releasing, 50, 0, 0},
		{"a step up some live clusters took is not recorded", Step{State: Releasing, Action: Sync}, Applied{SomeLive: true}, Releasing, 25, 0, 0},
		{"a rollback some live clusters took is recorded", Step{State: Releasing, Action: Sync}, Applied{SomeLive: true, Rollback: true}, Releasing, 50, 0, 0},
		{"a failing build gives its traffic where clusters answer", Step{State: Failing, Action: Sync}, Applied{SomeLive: true, Rollback: true}, Failing, 10, 10, 40},
		{"a failing build gives the rest of it and waits for the others", Step{State: Failing, Action: Retire, Then: Failed}, Applied{SomeLive: true, Rollback: true}, Failing, 0, 0, 10},
		{"a failing build is failed once every live cluster took it", Step{State: Failing, Action: Retire, Then: Failed}, Applied{FleetLive: true, Live: true, SomeLive: true, Rollback: true}, Failed, 0, 0, 10},
		{"a finished deploy passed on to its release is released once its sync is done", Step{State: Releasing, Action: Sync, Unfinished: Deploying}, liveOnly, Releasing, 50, 0, 0},
		{"a finished deploy passed on whose sync a live cluster lacks stays deploying", Step{State: Releasing, Action: Sync, Unfinished: Deploying}, buildLagging, Deploying, 50, 0, 0},
		{"a finished deploy passed on to its last step is released once every live cluster took it", Step{State: Releasing, Action: Sync, Then: Released, Unfinished: Deploying}, liveOnly, Released, 50, 0, 0},
		{"a finished deploy passed on to its last step stays deploying while a live cluster lags", Step{State: Releasing, Action: Sync, Then: Released, Unfinished: Deploying}, buildLagging, Deploying, 50, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.weight == 0 && tc.recorded == 0 {
				tc.weight, tc.recorded = 50, 25
			}
			state, weight := Settle(tc.step, tc.applied, tc.weight, tc.recorded)
			if state != tc.wantState || weight != tc.wantWeight {
				t.Errorf("Settle(%+v, %+v, %d, %d) = %s, %d; want %s, %d", tc.step, tc.applied, tc.weight, tc.recorded, state, weight, tc.wantState, tc.wantWeight)
			}
		})
	}
}

// TestUnsettled: only a step settled back on its Unfinished state keeps
// the weights recorded before.
func TestUnsettled(t *testing.T) {
	passedOn := Step{State: Releasing, Action: Sync, Unfinished: Deploying}
	for _, tc := range []struct {
		name  string
		step  Step
		state State
		want  bool
	}{
		{"settled back on its unfinished state", passedOn, Deploying, true},
		{"settled where it was passed on to", passedOn, Releasing, false},
		{"a step without an unfinished state", Step{State: Deploying, Action: Sync, Then: Deployed}, Deploying, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unsettled(tc.step, tc.state); got != tc.want {
				t.Errorf("Unsettled(%+v, %s) = %v, want %v", tc.step, tc.state, got, tc.want)
			}
		})
	}
}
