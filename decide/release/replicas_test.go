package release

import "testing"

func TestReplicasPerCluster(t *testing.T) {
	for _, tc := range []struct {
		count, percent int32
		live           int
		factor         float64
		want           int32
	}{
		{count: 4, percent: 0, live: 2, factor: 1, want: 1},
		{count: 4, percent: 100, live: 2, factor: 1, want: 2},
		{count: 5, percent: 100, live: 2, factor: 1, want: 3},
		{count: 5, percent: 100, live: 2, factor: 0.5, want: 2},
		{count: 5, percent: 100, live: 2, factor: 2, want: 6},
		{count: 10, percent: 10, live: 3, factor: 1, want: 1},
		{count: 4, percent: 100, live: 0, factor: 1, want: 4},
		{count: 4, percent: 100, live: 2, factor: 0, want: 0},
		{count: 0, percent: 100, live: 2, factor: 1, want: 1},
	} {
		if got := ReplicasPerCluster(tc.count, tc.percent, tc.live, tc.factor); got != tc.want {
			t.Errorf("ReplicasPerCluster(%d, %d%%, %d live, ×%v) = %d, want %d", tc.count, tc.percent, tc.live, tc.factor, got, tc.want)
		}
	}
}

func TestScalingFactor(t *testing.T) {
	for s, want := range map[string]float64{"": 1, "1.0": 1, "0.5": 0.5, "0": 0, "3": 3} {
		if got, err := ScalingFactor(s); err != nil || got != want {
			t.Errorf("ScalingFactor(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"x", "-1", "NaN", "Inf"} {
		if _, err := ScalingFactor(s); err == nil {
			t.Errorf("ScalingFactor(%q) accepted", s)
		}
	}
}

func TestObservation_Deployment(t *testing.T) {
	ready := map[string]Replicas{"v1": {Desired: 2, Available: 2}}
	for _, tc := range []struct {
		name string
		o    Observation
		want Deployment
	}{
		{"no clusters", nil, Unknown},
		{"only standby", Observation{{Name: "a", Live: false, Observed: true, Tags: ready}}, Unknown},
		{"all live ready", Observation{{Name: "a", Live: true, Observed: true, Tags: ready}, {Name: "b", Live: true, Observed: true, Tags: ready}}, IsDeployed},
		{"standby not ready is ignored", Observation{{Name: "a", Live: true, Observed: true, Tags: ready}, {Name: "s", Observed: true}}, IsDeployed},
		{"one live missing the build", Observation{{Name: "a", Live: true, Observed: true, Tags: ready}, {Name: "b", Live: true, Observed: true}}, NotDeployed},
		{"one live unobserved", Observation{{Name: "a", Live: true, Observed: true, Tags: ready}, {Name: "b", Live: true}}, Unknown},
		{"summed available below desired", Observation{{Name: "a", Live: true, Observed: true, Tags: map[string]Replicas{"v1": {Desired: 3, Available: 1}}}}, NotDeployed},
	} {
		if got := tc.o.Deployment("v1"); got != tc.want {
			t.Errorf("%s: Deployment = %v, want %v", tc.name, got, tc.want)
		}
	}
}
