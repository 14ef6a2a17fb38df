package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// meshCatchUpTimeout bounds the wait for the mesh's routes in effect to be
// those the clusters hold: its lag, and its reading of them.
const meshCatchUpTimeout = 30 * time.Second

// noRequestsToUnready reads how many requests the mesh has sent so far to
// builds of app with no ready pod on their cluster (mesh.UnreadyRequests),
// and returns the check to run once the app's releases, rollbacks and
// retirements are done, before the app is removed: it waits until the
// routes in effect in the mesh are those on the clusters (a change takes
// effect the mesh's lag after it is written, and is counted then), and
// fails the test with each cluster and build the mesh sent more requests
// to since, while none of its pods was ready. A build whose pods go
// before its last route has reached the traffic is one such; its pods
// must outlast the route by the lag.
func noRequestsToUnready(t *testing.T, app string) (check func()) {
	t.Helper()
	ctx := context.Background()
	before, err := mesh.UnreadyRequests(ctx, lab.MeshURL, app)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := meshCaughtUp(ctx, app); err != nil {
			t.Error(err)
		}
		after, err := mesh.UnreadyRequests(ctx, lab.MeshURL, app)
		if err != nil {
			t.Error(err)
			return
		}
		var counted []string
		for _, cluster := range slices.Sorted(maps.Keys(after)) {
			for _, tag := range slices.Sorted(maps.Keys(after[cluster])) {
				if n := after[cluster][tag] - before[cluster][tag]; n > 0 {
					counted = append(counted, fmt.Sprintf("%s on %s: %.0f", tag, cluster, n))
				}
			}
		}
		if len(counted) > 0 {
			t.Errorf("the mesh sent %s requests to builds with no ready pod (mesh_requests_to_unready_total; "+
				"a route change reaches its traffic %s after it is written): %s", app, mesh.DefaultLag, strings.Join(counted, "; "))
		}
	}
}

// meshCaughtUp waits until the mesh's weights in effect for app are, on
// every target, those of the app's release route there.
func meshCaughtUp(ctx context.Context, app string) error {
	return kit.Poll(ctx, pollInterval, meshCatchUpTimeout, app+": the mesh's routes in effect those of the clusters", func(ctx context.Context) error {
		inEffect, err := mesh.Weights(ctx, lab.MeshURL)
		if err != nil {
			return err
		}
		for _, c := range lab.Targets {
			obs := story.ObserveCluster(ctx, c, app)
			if obs.Err != nil {
				return obs.Err
			}
			mine := maps.Clone(inEffect[c.Name][app])
			maps.DeleteFunc(mine, func(_ string, w int32) bool { return w == 0 })
			if !maps.Equal(mine, obs.Weights) {
				return fmt.Errorf("%s: the mesh sends %v, the route says %v", c.Name, mine, obs.Weights)
			}
		}
		return nil
	})
}
