package main

import (
	"testing"
	"time"
)

// A fleet sized by nodesFor holds both builds of every app at once, each
// with podsPerBuild pods: a pod that finds no node stays Pending, and a
// tool waits for capacity, not for its own work. With too few nodes, Argo
// Rollouts' second build at 1000 apps never became Healthy (its canary
// pods Pending until its progress deadline) and, at 100 apps, waited for
// its old pods' scale-down delay.
func TestNodesFor_HoldsBothBuildsOfEveryApp(t *testing.T) {
	const podsPerNode = 110 // a kwok node's, as kwokctl makes them
	for _, apps := range []int{1, 10, 82, 100, 101, 500, 1000, 2500} {
		nodes := nodesFor(apps)
		if room, need := nodes*podsPerNode, 2*podsPerBuild*apps; room < need {
			t.Errorf("nodesFor(%d) = %d: room for %d pods, both builds of every app need %d", apps, nodes, room, need)
		}
	}
}

func TestSpread(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 10; i++ {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	if got, want := spread(ds), "1s / 6s / 10s / 10s"; got != want {
		t.Errorf("spread of 1..10 s: %q, want %q", got, want)
	}
	if got, want := spread(nil), "none"; got != want {
		t.Errorf("spread of nothing: %q, want %q", got, want)
	}
}
