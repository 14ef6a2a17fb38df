package release

import (
	"fmt"
	"math"
	"strconv"
)

// ReplicasPerCluster is the number of replicas a build runs on one cluster:
// its share of count for percent of the traffic, divided across the fleet's
// live clusters (at least 1), times the cluster's scaling factor, rounded
// up. A build that takes no traffic yet runs one replica per cluster (times
// the factor), so it can be checked before it serves. A factor of 0 runs
// nothing on the cluster.
func ReplicasPerCluster(count, percent int32, liveClusters int, factor float64) int32 {
	if liveClusters < 1 {
		liveClusters = 1
	}
	share := int64(1)
	if percent > 0 && count > 0 {
		share = max(1, ceilDiv(int64(count)*int64(percent), 100*int64(liveClusters)))
	}
	return int32(min(math.Ceil(float64(share)*factor), math.MaxInt32))
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ScalingFactor parses a Cluster's scalingFactorString ("" means 1).
func ScalingFactor(s string) (float64, error) {
	if s == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("scalingFactorString %q is not a non-negative number", s)
	}
	return f, nil
}
