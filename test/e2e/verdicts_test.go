package e2e

import (
	"context"
	"fmt"
	"slices"
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

// labelledByTheMesh gives each of clusters' Clusters in app's fleet
// (wavesFleet) the value the mesh counts its requests by
// (destination_cluster, the fleet's name of the cluster, copied into the
// label cluster by the SLO queries).
func labelledByTheMesh(t *testing.T, app string, clusters ...*fleet.Cluster) {
	t.Helper()
	ctx := context.Background()
	for _, c := range clusters {
		cl := &picchuv1alpha1.Cluster{}
		if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: inFleet(c, app)}, cl); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cl.DeepCopy())
		cl.Spec.Prometheus = &picchuv1alpha1.ClusterPrometheus{ClusterLabelValue: c.Name}
		if err := lab.Delivery.Client.Patch(ctx, cl, patch); err != nil {
			t.Fatal(err)
		}
	}
}

// comparedInWaves releases a build of app in two waves, east (bake) then
// west, stepping 10 % then 100 % every stepDelay, its SLO's requests and
// errors counted by cluster and compared against its baseline's at each
// gate: its canary in east, its first step in west.
func comparedInWaves(app string, bake, stepDelay time.Duration) func(*picchuv1alpha1.Revision) {
	byCluster := func(match string) string {
		return fmt.Sprintf(`sum by (destination_version, cluster) (label_replace(istio_requests_total{%s}, "cluster", "$1", "destination_cluster", "(.*)"))`, match)
	}
	return func(r *picchuv1alpha1.Revision) {
		tg := &r.Spec.Targets[0]
		tg.Fleet = app
		// Routed by the Gateway API: the mesh sends each build the share
		// its HTTPRoutes weigh it.
		tg.Router = picchuv1alpha1.RouterGatewayAPI
		tg.Canary.TTL = 5
		tg.Release.GeometricScaling = picchuv1alpha1.GeometricScaling{Start: 10, Factor: 10, Delay: &metav1.Duration{Duration: stepDelay}}
		tg.Release.Waves = []picchuv1alpha1.ReleaseWave{
			{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: bake}},
			{Name: "west"},
		}
		sli := &tg.ServiceLevelObjectives[0].ServiceLevelIndicator
		sli.TotalQuery = byCluster(`reporter="destination",destination_app="` + app + `"`)
		sli.ErrorQuery = byCluster(`reporter="destination",destination_app="` + app + `",response_code=~"5.."`)
		// The mesh sends each cluster 100 requests a second for the app,
		// so a build at 10 % counts 10 a second: 50 requests take some
		// 5 s, where the default minimum (3 236 a side) would take over 5
		// minutes. At 40 % errors against none, 50 are plenty.
		sli.Canary.Baseline = &picchuv1alpha1.SLIBaseline{MinRequests: 50}
	}
}

// TestWaveFailureNamedByCluster: app "rift", routed by the Gateway API,
// releases in two waves, east then west, its SLO counted by cluster and compared against its baseline
// at each gate. v1 is released in both. v2 canaries and is released in
// east, where it errs no more than v1; the mesh fails 40 % of its requests
// in west alone, so when it takes its first step there the comparison at
// west's gate fails it. Its traffic goes back to v1 in both clusters, and
// its failure reason, its record of each cluster and `kubectl picchu
// status` name west's Cluster, and not east's.
func TestWaveFailureNamedByCluster(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "rift"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	east, west := wavesFleet(t, app)
	labelledByTheMesh(t, app, east, west)
	eastCluster, westCluster := inFleet(east, app), inFleet(west, app)
	t.Cleanup(func() {
		if err := mesh.SetErrorRatioIn(ctx, lab.MeshURL, west.Name, app, "v2", 0); err != nil {
			t.Error(err)
		}
	})
	if err := mesh.SetErrorRatioIn(ctx, lab.MeshURL, west.Name, app, "v2", 0.4); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	inWaves := comparedInWaves(app, 5*time.Second, 3*time.Second)
	apply(t, app, "v1", inWaves)
	until(t, 3*time.Minute, app, "v1 released", releasedEverywhere("v1", east.Name, west.Name))
	t.Logf("v1 released in both waves after %s", time.Since(start).Round(time.Millisecond))

	// v2 is released in east, west on v1 alone, then steps in west.
	v2 := apply(t, app, "v2", inWaves)
	if err := kit.Poll(ctx, pollInterval, 2*time.Minute, app+": v2 released in east", func(ctx context.Context) error {
		inEast, err := weightsIn(ctx, east, app)
		if err != nil {
			return err
		}
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		rec, err := buildRecord(ctx, app, "v2")
		if err != nil {
			return err
		}
		if rec.State.Current != "releasing" || rec.Wave != 1 || inEast["v2"] != 100 || inWest["v1"] != 100 {
			return fmt.Errorf("v2 %s in wave %d, east %v, west %v", rec.State.Current, rec.Wave, inEast, inWest)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": v2 in west", func(ctx context.Context) error {
		inWest, err := weightsIn(ctx, west, app)
		if err != nil {
			return err
		}
		if rec, err := buildRecord(ctx, app, "v2"); err == nil && rec.State.Current != "releasing" {
			t.Fatalf("v2 %s before it took traffic in west\n%s", rec.State.Current, recordOf(app))
		}
		if inWest["v2"] == 0 {
			return fmt.Errorf("west routes %v", inWest)
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	stepped := time.Now()

	// West's gate fails it, naming west; v1 takes all the traffic back in
	// both waves.
	var reason string
	if err := kit.Poll(ctx, pollInterval, time.Minute, app+": v2 failed", func(ctx context.Context) error {
		rev := &picchuv1alpha1.Revision{}
		if err := lab.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v2), rev); err != nil {
			return err
		}
		if !rev.Spec.Failed {
			return fmt.Errorf("v2 not failed")
		}
		reason = rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	t.Logf("v2 failed %s after its first step in west: %s", time.Since(stepped).Round(time.Millisecond), reason)
	for _, want := range []string{"availability_baseline", "cluster " + westCluster, "v2 fails availability", "against v1's 0 %", "in wave west"} {
		if !strings.Contains(reason, want) {
			t.Errorf("v2 failed for %q, want %q in it", reason, want)
		}
	}
	if strings.Contains(reason, eastCluster) {
		t.Errorf("v2 failed for %q, naming %s where it erred no more than v1", reason, eastCluster)
	}
	took := routesAlone(t, time.Minute, app, "v1", east, west)
	t.Logf("east and west route v1 alone %s after v2 failed", took.Round(time.Millisecond))
	until(t, time.Minute, app, "v2 rolled back", func(s story.Snapshot) error {
		if st := s.Build("v2").State; st != "failed" {
			return fmt.Errorf("v2 is %q", st)
		}
		return nil
	})

	// Rolled back, v2's record still names west alone.
	rec, err := buildRecord(ctx, app, "v2")
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, c := range rec.Clusters {
		named := slices.Contains(c.TriggeredAlerts, "availability_baseline") && c.Verdict != ""
		if named != (c.Name == westCluster) {
			t.Errorf("v2's record of %s: alerts %v, verdict %q; want the comparison's alert and verdict on %s alone", c.Name, c.TriggeredAlerts, c.Verdict, westCluster)
		}
		recorded = recorded || named
	}
	if !recorded {
		t.Errorf("v2's record of its clusters %+v does not name %s", rec.Clusters, westCluster)
	}

	// So does `kubectl picchu status`: in the timeline and the verdicts.
	status := picchu(t, "status", app)
	var timeline, verdict bool
	for _, line := range strings.Split(status, "\n") {
		fields := strings.Fields(line)
		timeline = timeline || (len(fields) > 1 && fields[1] == "v2" && strings.Contains(line, "failed: availability_baseline fired (cluster "+westCluster+";"))
		verdict = verdict || slices.Equal(fields[:min(3, len(fields))], []string{"v2", westCluster, "availability_baseline"})
		if strings.Contains(line, "availability_baseline") && strings.Contains(line, eastCluster) {
			t.Errorf("status names %s for v2's failure: %q", eastCluster, line)
		}
	}
	if !timeline || !verdict {
		t.Errorf("status names %s in the timeline: %t, in the verdicts: %t; want both", westCluster, timeline, verdict)
	}
	t.Logf("v1 to v2 rolled back in %s", time.Since(start).Round(time.Millisecond))
}
