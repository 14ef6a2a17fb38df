package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// wavesFleet registers east (labelled region=east) and west as fleet app,
// a fleet of app's own, as Clusters named inFleet(c, app), and returns the
// two. Cleanup removes app, then the Clusters. Each app of the wave tests has
// a fleet of its own, so that they run side by side (quietNeighbour).
func wavesFleet(t *testing.T, app string) (east, west *fleet.Cluster) {
	t.Helper()
	ctx := context.Background()
	east, west = lab.Target("east"), lab.Target("west")
	t.Cleanup(func() {
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Error(err)
		}
		for _, c := range []*fleet.Cluster{east, west} {
			cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Namespace, Name: inFleet(c, app)}}
			if err := lab.Delivery.Client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
	})
	for _, c := range []*fleet.Cluster{east, west} {
		if err := lab.Register(ctx, c, inFleet(c, app), app); err != nil {
			t.Fatal(err)
		}
	}
	cl := &picchuv1alpha1.Cluster{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: inFleet(east, app)}, cl); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Labels["region"] = "east"
	if err := lab.Delivery.Client.Patch(ctx, cl, patch); err != nil {
		t.Fatal(err)
	}
	return east, west
}

// inFleet is the name of c's Cluster in the fleet wavesFleet makes for app.
func inFleet(c *fleet.Cluster, app string) string { return c.Name + "-" + app }

// weightsIn reads the weight of each of app's builds in cluster c.
func weightsIn(ctx context.Context, c *fleet.Cluster, app string) (map[string]int32, error) {
	obs := story.ObserveCluster(ctx, c, app)
	return obs.Weights, obs.Err
}

// TestReleaseInWaves: app "waves" releases in two waves, east (bake 10 s)
// then west. v2 canaries in east alone, ramps and is released there while
// west stays on v1; west starts its ramp no sooner than the bake after, and
// v2 is released once west has it all. v1 routes through Istio, v2 and v3
// through the Gateway API: v2 moves the app's routes from one to the
// other, and the mesh counts no request without a route meanwhile. A v3
// failed while it ramps in west is rolled back in both. Throughout, the
// mesh sends no request to a build without a ready pod.
func TestReleaseInWaves(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "waves"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	checkNoUnready := noRequestsToUnready(t, app)
	east, west := wavesFleet(t, app)
	const bake = 10 * time.Second
	inWaves := func(stepDelay time.Duration) func(*picchuv1alpha1.Revision) {
		return func(r *picchuv1alpha1.Revision) {
			tg := &r.Spec.Targets[0]
			tg.Fleet = app
			tg.Release.GeometricScaling.Delay = &metav1.Duration{Duration: stepDelay}
			tg.Release.Waves = []picchuv1alpha1.ReleaseWave{
				{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: bake}},
				{Name: "west"},
			}
		}
	}
	gatewayAPI := func(stepDelay time.Duration) func(*picchuv1alpha1.Revision) {
		return func(r *picchuv1alpha1.Revision) {
			inWaves(stepDelay)(r)
			r.Spec.Targets[0].Router = picchuv1alpha1.RouterGatewayAPI
		}
	}
	apply(t, app, "v1", inWaves(3*time.Second))
	until(t, 3*time.Minute, app, "v1 released", releasedEverywhere("v1", east.Name, west.Name))
	unroutedBefore, err := mesh.Unrouted(ctx, lab.MeshURL, app)
	if err != nil {
		t.Fatal(err)
	}

	// v2: while it canaries and ramps in east, west routes v1 alone.
	apply(t, app, "v2", gatewayAPI(3*time.Second))
	var canaried bool
	var eastDone *picchuv1alpha1.ReleaseManagerRevisionStatus
	if err := kit.Poll(ctx, pollInterval, 3*time.Minute, app+": v2 released in east", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		inEast, err := weightsIn(ctx, east, app)
		if err != nil {
			return err
		}
		rec, err := buildRecord(ctx, app, "v2")
		if err != nil {
			return err
		}
		if rec.Wave == 0 && inWest["v2"] != 0 {
			t.Fatalf("west routes %v while v2 %s in its first wave\n%s", inWest, rec.State.Current, recordOf(app))
		}
		if rec.State.Current == "canarying" && inEast["v2"] > 0 && inEast["v2"] < 100 {
			canaried = true
		}
		if rec.Wave != 1 {
			return fmt.Errorf("v2 %s in wave %d, east %v, west %v", rec.State.Current, rec.Wave, inEast, inWest)
		}
		if inEast["v2"] != 100 || inWest["v1"] != 100 {
			return fmt.Errorf("v2 in west's wave: east %v, west %v", inEast, inWest)
		}
		eastDone = &rec
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	if !canaried {
		t.Errorf("v2 never seen canarying in east")
	}
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		t.Fatal(err)
	}
	if r := rm.Status.Releasing; r == nil || r.Tag != "v2" || !strings.HasPrefix(r.Wave, "west (2/2)") {
		t.Errorf("status.releasing %+v, want v2 in west (2/2)", r)
	}

	// West ramps once east's bake has passed since v2 entered west's wave.
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": v2 ramping in west", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		if inWest["v2"] == 0 {
			return fmt.Errorf("west routes %v", inWest)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	waited := time.Since(eastDone.WaveStarted.Time)
	t.Logf("v2 released in east; west ramps %s after v2 entered its wave (bake %s)", waited.Round(time.Millisecond), bake)
	if waited < bake {
		t.Errorf("west ramped %s after v2 entered its wave, sooner than the bake of %s", waited, bake)
	}
	until(t, 2*time.Minute, app, "v2 released", releasedEverywhere("v2", east.Name, west.Name))
	for _, c := range []*fleet.Cluster{east, west} {
		if err := story.ObserveGatewayRoute(ctx, c, app); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if after, err := mesh.Unrouted(ctx, lab.MeshURL, app); err != nil {
		t.Error(err)
	} else if after > unroutedBefore {
		t.Errorf("the mesh counted %.0f requests to %s without a route while its routes moved to the Gateway API", after-unroutedBefore, app)
	}

	// v3, failed while it ramps in west, is rolled back in both waves. It
	// has no canary and bakes 2 s in east: what it shows is the rollback.
	v3 := func(r *picchuv1alpha1.Revision) {
		gatewayAPI(3 * time.Second)(r)
		tg := &r.Spec.Targets[0]
		tg.Canary = picchuv1alpha1.Canary{}
		tg.Release.Waves[0].Bake = &metav1.Duration{Duration: 2 * time.Second}
	}
	apply(t, app, "v3", v3)
	if err := kit.Poll(ctx, pollInterval, 3*time.Minute, app+": v3 ramping in west", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		if inWest["v3"] == 0 || inWest["v3"] == 100 {
			return fmt.Errorf("west routes %v", inWest)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	apply(t, app, "v3", func(r *picchuv1alpha1.Revision) { v3(r); r.Spec.Failed = true })
	took := routesAlone(t, time.Minute, app, "v2", east, west)
	t.Logf("v3 failed while ramping in west: east and west route v2 alone %s later", took.Round(time.Millisecond))
	until(t, time.Minute, app, "v3 failed", func(s story.Snapshot) error {
		if st := s.Build("v3").State; st != "failed" {
			return fmt.Errorf("v3 is %q", st)
		}
		return nil
	})
	checkNoUnready()
}
