package release

import (
	"reflect"
	"testing"
)

func TestObservation_Excluding(t *testing.T) {
	obs := Observation{
		{Name: "a", Live: true, Observed: true, Tags: map[string]Replicas{"v1": {Desired: 2, Available: 2}}},
		{Name: "b", Live: true, Observed: true, Tags: map[string]Replicas{"v1": {Desired: 0, Available: 0}}},
		{Name: "c", Live: false, Observed: true, Tags: map[string]Replicas{"v1": {Desired: 1, Available: 1}}},
	}
	for _, tc := range []struct {
		name     string
		excluded map[string]bool
		live     int
		deployed Deployment
		replicas Replicas
	}{
		{name: "none", live: 2, deployed: NotDeployed, replicas: Replicas{Desired: 2, Available: 2}},
		{name: "the cluster running none", excluded: map[string]bool{"b": true}, live: 1, deployed: IsDeployed, replicas: Replicas{Desired: 2, Available: 2}},
		{name: "a standby cluster", excluded: map[string]bool{"c": true}, live: 2, deployed: NotDeployed, replicas: Replicas{Desired: 2, Available: 2}},
		{name: "every live cluster", excluded: map[string]bool{"a": true, "b": true}, live: 0, deployed: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append(Observation(nil), obs...)
			got := obs.Excluding(tc.excluded)
			if got.LiveClusters() != tc.live || got.Deployment("v1") != tc.deployed || got.Live("v1") != tc.replicas {
				t.Errorf("live %d deployed %v replicas %+v", got.LiveClusters(), got.Deployment("v1"), got.Live("v1"))
			}
			if !reflect.DeepEqual(obs, before) {
				t.Error("the observation was modified")
			}
		})
	}
}

func TestIdle_SetsNoReplicasAndNoAutoscaler(t *testing.T) {
	if p := Idle(); !p.SetReplicas || p.Replicas != 0 || p.Autoscaler || p.Kind != "" || p.Ramping {
		t.Errorf("idle plan %+v", p)
	}
}
