package releasemanager

import (
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/prometheus"
)

// TestGateOf walks v2 of a release in two waves (east, then west after a
// minute's bake, steps of 10 s from 25 %) through the points where it needs
// evidence and a baseline comparison: none while it ramps in east or bakes,
// none at its first step in west until the step's delay has passed, then
// west's gate, and none once it stepped past its first step there.
func TestGateOf(t *testing.T) {
	w := newWaveRelease(t)
	v2 := w.builds["v2"]
	s := w.s
	at := func(wave int32, percents []int32, stepTaken time.Duration) {
		stamp := picchuv1alpha1.NewTimestamp(s.now.Add(-stepTaken))
		v2.status.State.Current = string(release.Releasing)
		v2.status.Wave, v2.status.WavePercents = wave, percents
		v2.status.Clusters = []picchuv1alpha1.ReleaseManagerRevisionClusterStatus{
			{Name: "east", Percent: percents[0], LastUpdated: &stamp},
			{Name: "west", Percent: percents[1], LastUpdated: &stamp},
		}
	}
	for _, tc := range []struct {
		name      string
		wave      int32
		percents  []int32
		stepTaken time.Duration
		gate      string
	}{
		{"ramping in east", 0, []int32{50, 0}, time.Minute, ""},
		{"baking west", 1, []int32{100, 0}, time.Minute, ""},
		{"first step in west, within its delay", 1, []int32{100, 25}, 5 * time.Second, ""},
		{"first step in west, held for its delay", 1, []int32{100, 25}, 10 * time.Second, "wave west (2/2)"},
		{"past the first step in west", 1, []int32{100, 50}, time.Minute, ""},
	} {
		at(tc.wave, tc.percents, tc.stepTaken)
		g, ok := s.gateOf(v2)
		if ok != (tc.gate != "") || g.name != tc.gate {
			t.Errorf("%s: gate %q (%v), want %q", tc.name, g.name, ok, tc.gate)
			continue
		}
		if ok && (len(g.clusters) != 1 || g.clusters[0].obj.Name != "west" || g.since != s.now.Add(-tc.stepTaken)) {
			t.Errorf("%s: gate clusters %d, since %v", tc.name, len(g.clusters), g.since)
		}
	}

	// A canary's gate is its TTL's end, in the first wave.
	start := picchuv1alpha1.NewTimestamp(s.now.Add(-30 * time.Second))
	v2.status.State.Current, v2.status.CanaryStartTimestamp = string(release.Canarying), &start
	v2.target.Canary = picchuv1alpha1.Canary{Percent: 10, TTL: 60}
	if g, ok := s.gateOf(v2); ok {
		t.Errorf("canary within its TTL: gate %q", g.name)
	}
	v2.target.Canary.TTL = 20
	if g, ok := s.gateOf(v2); !ok || g.name != "canary" || len(g.clusters) != 1 || g.clusters[0].obj.Name != "east" {
		t.Errorf("canary past its TTL: gate %+v, %v; want the canary in east", g, ok)
	}
	if b := s.baselineOf(v2, gate{clusters: s.liveIn(0)}); b == nil || b.tag != "v1" {
		t.Errorf("baseline %v, want v1", b)
	}
}

// TestFiringIn names each alert's cluster by its Cluster's label value (its
// name, or spec.prometheus.clusterLabelValue), and lets an alert without one
// name no cluster; the report records each
// alert on its cluster alone, and where it fired.
func TestFiringIn(t *testing.T) {
	w := newWaveRelease(t)
	s, v2 := w.s, w.builds["v2"]
	s.fleet[1].obj.Spec.Prometheus = &picchuv1alpha1.ClusterPrometheus{ClusterLabelValue: "us-west-2"}
	v2.status.WavePercents = []int32{100, 25}
	s.firingIn(v2, []prometheus.Alert{
		{Name: "HighErrorRate", Cluster: "us-west-2"}, {Name: "HighLatency", Cluster: "east"},
		{Name: "HighLatency", Cluster: "us-west-2"}, {Name: "Saturation"},
	})
	if got := v2.firingIn; len(got) != 2 || len(got["west"]) != 2 || got["west"][0] != "HighErrorRate" || len(got["east"]) != 1 {
		t.Errorf("firingIn %v", got)
	}
	if got, want := s.firingWhere(v2), "clusters east, west; waves east (1/2), west (2/2)"; got != want {
		t.Errorf("firingWhere = %q, want %q", got, want)
	}
	v2.verdict = release.Firing
	v2.judgeCluster("west", "outlier: 6.1 % errors")
	entries := []picchuv1alpha1.ReleaseManagerRevisionClusterStatus{{Name: "east", TriggeredAlerts: []string{"Old"}}, {Name: "west"}}
	clusterVerdicts(entries, v2)
	if a := entries[0].TriggeredAlerts; len(a) != 2 || a[0] != "HighLatency" || a[1] != "Old" || entries[0].Verdict != "" {
		t.Errorf("east: %+v", entries[0])
	}
	if a := entries[1].TriggeredAlerts; len(a) != 2 || entries[1].Verdict != "outlier: 6.1 % errors" {
		t.Errorf("west: %+v", entries[1])
	}
	// An unjudged run changes nothing on record.
	v2.verdict, v2.clusterVerdicts = release.Unjudged, nil
	clusterVerdicts(entries, v2)
	if entries[1].Verdict == "" {
		t.Error("an unjudged run cleared west's verdict")
	}
}
