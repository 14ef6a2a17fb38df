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
	}{
		{"a step without Then keeps its state", Step{State: Releasing, Action: Sync}, everywhere, Releasing, 50},
		{"a sync done on every live cluster reaches Then", Step{State: Deploying, Action: Sync, Then: Deployed}, liveOnly, Deployed, 50},
		{"a sync not done on a live cluster stays", Step{State: Deploying, Action: Sync, Then: Deployed}, buildLagging, Deploying, 50},
		{"a retirement done on every live cluster reaches Then", Step{State: Retiring, Action: Retire, Then: Retired}, liveOnly, Retired, 50},
		{"a deletion waits for every cluster, live or not", Step{State: Deleting, Action: Delete, Then: Deleted}, liveOnly, Deleting, 50},
		{"a deletion done everywhere reaches Then", Step{State: Deleting, Action: Delete, Then: Deleted}, everywhere, Deleted, 50},
		{"a weight no live cluster has is not recorded", Step{State: Releasing, Action: Sync}, Applied{}, Releasing, 25},
		{"a rollback no live cluster took keeps its state and old weight", Step{State: Failing, Action: Sync, Then: Failed}, Applied{}, Failing, 25},
		{"a build whose own objects lag still records the fleet's weight", Step{State: Releasing, Action: Sync}, buildLagging, Releasing, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state, weight := Settle(tc.step, tc.applied, 50, 25)
			if state != tc.wantState || weight != tc.wantWeight {
				t.Errorf("Settle(%+v, %+v, 50, 25) = %s, %d; want %s, %d", tc.step, tc.applied, state, weight, tc.wantState, tc.wantWeight)
			}
		})
	}
}
