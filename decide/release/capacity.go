package release

import "math"

// CapacityInput is what the capacity gate of a ramping build is decided from.
type CapacityInput struct {
	// ScaleMin, ScaleMax and HasAutoscaler are the build's scale settings,
	// for the whole fleet.
	ScaleMin      *int32
	ScaleMax      int32
	HasAutoscaler bool
	// Others are the other builds of the target: their traffic and
	// available pods (fleet total). Those without both take no part.
	Others []Serving
	// LiveClusters is the number of live clusters of the fleet, and Factors
	// their scaling factors; a live cluster with no entry in Factors counts
	// as factor 1, entries beyond LiveClusters are ignored.
	LiveClusters int
	Factors      []float64
	// Available is the build's available replicas, fleet total.
	Available int32
	// Observed says, for each live cluster (in the order of Factors),
	// whether its pods were seen; nil means every one was. Available then
	// counts the observed clusters alone, and the gate asks them for their
	// own share only: a rollback goes on in the clusters that answer.
	Observed []bool
}

// Serving is another build of the target as the capacity gate sees it.
type Serving struct {
	Percent int32
	Pods    int32
	// Unscaled says the build is a recommissioned one (it once had 100% and
	// now has less) whose pods were not scaled down with its traffic.
	Unscaled bool
}

// CanRampTo says whether a build has the replicas to take next percent of
// the traffic. It needs scale.min: without it, or without a live cluster, it
// says no. The capacity the target needs at 100% is BaseCapacity. The build
// needs 90% of that capacity, spread over the fleet, times next
// percent (rounded up), and never more than the fleet's replicas for
// scale.max. A next of 0 needs nothing, and so does a fleet whose every
// scaling factor is 0, as it will never run a pod.
func CanRampTo(in CapacityInput, next int32) bool {
	if in.ScaleMin == nil {
		return false
	}
	factors := in.liveFactors()
	if len(factors) == 0 {
		return false
	}
	seen := in.observedFactors(factors)
	if len(seen) == 0 {
		return false
	}
	fleet := int64(observedReplicas(in.baseCapacity(), factors, seen))
	required := ceilDiv(9*fleet*int64(clampPercent(next)), 1000)
	required = min(required, int64(observedReplicas(in.ScaleMax, factors, seen)))
	return int64(max(in.Available, 0)) >= required
}

// observedFactors are the factors of the observed live clusters.
func (in CapacityInput) observedFactors(factors []float64) []float64 {
	if in.Observed == nil {
		return factors
	}
	var out []float64
	for i, f := range factors {
		if i < len(in.Observed) && in.Observed[i] {
			out = append(out, f)
		}
	}
	return out
}

// observedReplicas is what FleetReplicas runs of count on the clusters of
// seen, when count is divided over all the live clusters of factors.
func observedReplicas(count int32, factors, seen []float64) int32 {
	var total int64
	for _, f := range seen {
		if f > 0 {
			total += int64(ReplicasPerCluster(count, 100, len(factors), f))
		}
	}
	return int32(min(total, math.MaxInt32))
}

// baseCapacity is the fleet-wide replica count the target needs at 100%.
func (in CapacityInput) baseCapacity() int32 {
	return BaseCapacity(in.ScaleMin, in.ScaleMax, in.HasAutoscaler, in.Others, in.liveFactors())
}

// liveFactors is one scaling factor per live cluster.
func (in CapacityInput) liveFactors() []float64 {
	factors := make([]float64, max(in.LiveClusters, 0))
	for i := range factors {
		factors[i] = 1
		if i < len(in.Factors) {
			factors[i] = in.Factors[i]
		}
	}
	return factors
}

// FleetReplicas is the number of replicas count becomes across a fleet of
// live clusters with these scaling factors: count divided by the number of
// clusters (rounded up, at least 1), times each cluster's factor (rounded
// up), summed. A factor that is not a positive number runs nothing.
func FleetReplicas(count int32, factors []float64) int32 {
	var total int64
	for _, f := range factors {
		if f > 0 {
			total += int64(ReplicasPerCluster(count, 100, len(factors), f))
		}
	}
	return int32(min(total, math.MaxInt32))
}
