package releasemanager

import (
	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// skipsEventDriven says cl runs no pod of the build of rev: the Revision
// is eventDriven and the Cluster sets disableEventDriven.
func skipsEventDriven(rev *picchuv1alpha1.Revision, cl *picchuv1alpha1.Cluster) bool {
	return rev != nil && rev.Spec.EventDriven && cl.Spec.DisableEventDriven
}

// idleClusters are the clusters of the fleet that run no pod of the
// build (skipsEventDriven), or nil.
func (s *snapshot) idleClusters(inc *incarnation) map[string]bool {
	var out map[string]bool
	for _, fc := range s.fleet {
		if skipsEventDriven(inc.revision, fc.obj) {
			if out == nil {
				out = map[string]bool{}
			}
			out[fc.obj.Name] = true
		}
	}
	return out
}

// observationOf is the fleet as the build sees it: the clusters that run
// none of it are not live for it (release.Observation.Excluding), so its
// replicas are divided over the others, and its readiness and the capacity
// gate wait for pods there alone.
func (s *snapshot) observationOf(inc *incarnation) release.Observation {
	return s.observation.Excluding(s.idleClusters(inc))
}

// liveFactorsOf are the scaling factors of the live clusters that run the
// build, in the order of observationOf.
func (s *snapshot) liveFactorsOf(inc *incarnation) []float64 {
	idle := s.idleClusters(inc)
	var out []float64
	for _, fc := range s.fleet {
		if fc.live && !idle[fc.obj.Name] {
			out = append(out, fc.factor)
		}
	}
	return out
}

// liveObservedOf says, for each live cluster that runs the build (in the
// order of liveFactorsOf), whether this run could read its pods.
func (s *snapshot) liveObservedOf(inc *incarnation) []bool {
	var out []bool
	for _, c := range s.observationOf(inc) {
		if c.Live {
			out = append(out, c.Observed)
		}
	}
	return out
}

// runsOn says the build runs pods on the cluster: not when the cluster
// skips it (skipsEventDriven), nor when its scaling factor is 0. Elsewhere
// its ReplicaSet is kept at 0 replicas and it has no autoscaler, which
// would run at least one pod.
func runsOn(inc *incarnation, fc *fleetCluster) bool {
	return fc.factor > 0 && !skipsEventDriven(inc.revision, fc.obj)
}
