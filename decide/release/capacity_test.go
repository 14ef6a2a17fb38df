package release

import (
	"math"
	"testing"
	"testing/quick"
)

func ptr(v int32) *int32 { return &v }

func TestCanRampTo(t *testing.T) {
	two := []float64{1, 1}
	for _, tc := range []struct {
		name string
		in   CapacityInput
		next int32
		want bool
	}{
		// Min 6 over 3 clusters → 2 each; two observed need 90% × 4 = 3.6 → 4.
		{"only the observed clusters' share is asked for",
			CapacityInput{ScaleMin: ptr(6), ScaleMax: 6, LiveClusters: 3, Factors: []float64{1, 1, 1}, Available: 4,
				Observed: []bool{true, false, true}}, 100, true},
		{"the observed clusters short of their share",
			CapacityInput{ScaleMin: ptr(6), ScaleMax: 6, LiveClusters: 3, Factors: []float64{1, 1, 1}, Available: 3,
				Observed: []bool{true, false, true}}, 100, false},
		{"no observed cluster never ramps",
			CapacityInput{ScaleMin: ptr(6), ScaleMax: 6, LiveClusters: 3, Factors: []float64{1, 1, 1}, Available: 6,
				Observed: []bool{false, false, false}}, 100, false},
		{"every cluster observed is the whole fleet",
			CapacityInput{ScaleMin: ptr(6), ScaleMax: 6, LiveClusters: 3, Factors: []float64{1, 1, 1}, Available: 5,
				Observed: []bool{true, true, true}}, 100, false},
		{"no scale.min never ramps",
			CapacityInput{ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 100}, 10, false},
		// Alone: base = min 4 → 4 replicas; 90% × 4 × 50% = 1.8 → 2.
		{"alone, enough for min",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 2}, 50, true},
		{"alone, short of min",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 1}, 50, false},
		{"others without traffic or pods do not serve",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 2,
				Others: []Serving{{Percent: 0, Pods: 50}, {Percent: 50, Pods: 0}}}, 50, true},
		// Serving: 10 pods at 50% → 20 at 100%; 90% × 20 × 20% = 3.6 → 4.
		{"others scaled to 100%, enough",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, LiveClusters: 2, Factors: two, Available: 4,
				Others: []Serving{{Percent: 50, Pods: 10}}}, 20, true},
		{"others scaled to 100%, short",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, LiveClusters: 2, Factors: two, Available: 3,
				Others: []Serving{{Percent: 50, Pods: 10}}}, 20, false},
		{"several others are summed",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, LiveClusters: 2, Factors: two, Available: 3,
				Others: []Serving{{Percent: 30, Pods: 6}, {Percent: 20, Pods: 4}}}, 20, false},
		{"others' traffic above 100 counts as 100",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, LiveClusters: 1, Factors: []float64{1}, Available: 8,
				Others: []Serving{{Percent: 150, Pods: 10}}}, 100, false},
		// Capped at scale.max: 5 over 2 clusters → 3 each → 6.
		{"the requirement is capped at scale.max",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 5, LiveClusters: 2, Factors: two, Available: 6,
				Others: []Serving{{Percent: 50, Pods: 10}}}, 100, true},
		{"capped at scale.max, still short",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 5, LiveClusters: 2, Factors: two, Available: 5,
				Others: []Serving{{Percent: 50, Pods: 10}}}, 100, false},
		// Unscaled with an autoscaler: base = the others' 10 pods; 90% → 9.
		{"unscaled other with an autoscaler uses its pods",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, HasAutoscaler: true, LiveClusters: 2, Factors: two, Available: 9,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}}}, 100, true},
		{"unscaled other with an autoscaler, short",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: 100, HasAutoscaler: true, LiveClusters: 2, Factors: two, Available: 8,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}}}, 100, false},
		// Unscaled without an autoscaler: base = min 4 → 90% × 4 = 3.6 → 4.
		{"unscaled other without an autoscaler uses min",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 2, Factors: two, Available: 4,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}, {Percent: 60, Pods: 60}}}, 100, true},
		{"unscaled other without an autoscaler, short of min",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 2, Factors: two, Available: 3,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}}}, 100, false},
		// min 0: base = max 8 → 90% × 8 = 7.2 → 8.
		{"unscaled other without an autoscaler and min 0 uses max",
			CapacityInput{ScaleMin: ptr(0), ScaleMax: 8, LiveClusters: 2, Factors: two, Available: 8,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}}}, 100, true},
		{"unscaled other without an autoscaler and min 0, short of max",
			CapacityInput{ScaleMin: ptr(0), ScaleMax: 8, LiveClusters: 2, Factors: two, Available: 7,
				Others: []Serving{{Percent: 40, Pods: 10, Unscaled: true}}}, 100, false},
		// Factors [1, 2]: 4 → 2 per cluster → 2 + 4 = 6; 90% → 5.4 → 6.
		{"scaling factors multiply each cluster's share",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 2, Factors: []float64{1, 2}, Available: 6}, 100, true},
		{"scaling factors, short",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 2, Factors: []float64{1, 2}, Available: 5}, 100, false},
		{"a live cluster without a factor counts as 1",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 2, Factors: nil, Available: 3}, 100, false},
		{"factors beyond the live clusters are ignored",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 100, LiveClusters: 1, Factors: []float64{1, 100}, Available: 4}, 100, true},
		{"zero live clusters never ramps",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 0, Factors: two, Available: 100}, 10, false},
		{"negative live clusters never ramps",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: -1, Available: 100}, 10, false},
		{"all factors 0 need nothing",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: []float64{0, 0}, Available: 0}, 100, true},
		{"next 0 needs nothing",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 0}, 0, true},
		{"negative next needs nothing",
			CapacityInput{ScaleMin: ptr(4), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 0}, -10, true},
		{"next above 100 counts as 100",
			CapacityInput{ScaleMin: ptr(10), ScaleMax: 100, LiveClusters: 1, Factors: []float64{1}, Available: 9}, 400, true},
		// min 0 alone: at least 1 per cluster → 2; 90% × 2 × 10% = 0.18 → 1.
		{"min 0 still needs a replica to serve",
			CapacityInput{ScaleMin: ptr(0), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 0}, 10, false},
		{"negative min counts as 0",
			CapacityInput{ScaleMin: ptr(-5), ScaleMax: 10, LiveClusters: 2, Factors: two, Available: 1}, 10, true},
		{"huge pod counts do not overflow",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: math.MaxInt32, LiveClusters: 2, Factors: two, Available: math.MaxInt32,
				Others: []Serving{{Percent: 1, Pods: math.MaxInt32}, {Percent: 1, Pods: math.MaxInt32}}}, 100, true},
		{"huge pod counts still need 90%",
			CapacityInput{ScaleMin: ptr(1), ScaleMax: math.MaxInt32, LiveClusters: 2, Factors: two, Available: math.MaxInt32 / 10 * 8,
				Others: []Serving{{Percent: 1, Pods: math.MaxInt32}, {Percent: 1, Pods: math.MaxInt32}}}, 100, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := CanRampTo(tc.in, tc.next); got != tc.want {
				t.Errorf("CanRampTo(%+v, %d) = %v, want %v", tc.in, tc.next, got, tc.want)
			}
		})
	}
}

func TestFleetReplicas(t *testing.T) {
	for _, tc := range []struct {
		name    string
		count   int32
		factors []float64
		want    int32
	}{
		{"even split", 4, []float64{1, 1}, 4},
		{"uneven split rounds up per cluster", 5, []float64{1, 1}, 6},
		{"at least one per cluster", 0, []float64{1, 1, 1}, 3},
		{"negative count is at least one per cluster", -3, []float64{1, 1}, 2},
		{"factors round up per cluster", 5, []float64{0.5, 1}, 5},
		{"factor 2 doubles", 4, []float64{2, 2}, 8},
		{"no clusters", 4, nil, 0},
		{"a factor 0 cluster runs nothing but counts in the split", 4, []float64{0, 1}, 2},
		{"NaN and negative factors run nothing", 4, []float64{math.NaN(), -1, 1}, 2},
		{"infinite factors do not overflow", math.MaxInt32, []float64{math.Inf(1), math.Inf(1)}, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FleetReplicas(tc.count, tc.factors); got != tc.want {
				t.Errorf("FleetReplicas(%d, %v) = %d, want %d", tc.count, tc.factors, got, tc.want)
			}
		})
	}
}

// randomCapacity builds a CapacityInput from small random numbers.
func randomCapacity(minSet bool, scaleMin, scaleMax int16, hpa bool, others []int16, live int8, factors []uint8) CapacityInput {
	in := CapacityInput{ScaleMax: int32(scaleMax), HasAutoscaler: hpa, LiveClusters: int(live % 8)}
	if minSet {
		in.ScaleMin = ptr(int32(scaleMin))
	}
	for i := 0; i+1 < len(others); i += 2 {
		in.Others = append(in.Others, Serving{Percent: int32(others[i] % 120), Pods: int32(others[i+1]), Unscaled: others[i]%7 == 0})
	}
	for _, f := range factors {
		in.Factors = append(in.Factors, float64(f)/64)
	}
	return in
}

// TestCanRampTo_Monotonic checks, on random inputs, that CanRampTo never
// panics, refuses without scale.min or live clusters, always allows 0, and
// that more available replicas or a smaller step never turn a yes into a no.
func TestCanRampTo_Monotonic(t *testing.T) {
	prop := func(minSet bool, scaleMin, scaleMax int16, hpa bool, others []int16, live int8, factors []uint8, available int16, next int8) bool {
		in := randomCapacity(minSet, scaleMin, scaleMax, hpa, others, live, factors)
		in.Available = int32(available)
		ok := CanRampTo(in, int32(next))
		if !minSet || in.LiveClusters <= 0 {
			return !ok
		}
		if !CanRampTo(in, 0) {
			return false
		}
		more := in
		more.Available = in.Available + 1 + int32(max(scaleMax, 0))
		if ok && (!CanRampTo(more, int32(next)) || !CanRampTo(in, int32(next)/2)) {
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}

// TestCanRampTo_MaxIsEnough checks that fleet replicas for scale.max always
// suffice: the gate never asks for more than the autoscaler may run.
func TestCanRampTo_MaxIsEnough(t *testing.T) {
	prop := func(scaleMin, scaleMax int16, hpa bool, others []int16, live int8, factors []uint8, next int8) bool {
		in := randomCapacity(true, scaleMin, scaleMax, hpa, others, live, factors)
		if in.LiveClusters <= 0 {
			return true
		}
		in.Available = FleetReplicas(in.ScaleMax, in.liveFactors())
		return CanRampTo(in, int32(next))
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}
