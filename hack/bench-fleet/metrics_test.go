package main

import (
	"math"
	"testing"
)

func TestHistogram_Quantile(t *testing.T) {
	h := histogram{bounds: []float64{0.1, 0.5, 1, math.Inf(1)}, counts: []float64{50, 90, 100, 100}, count: 100}
	for _, tc := range []struct{ q, want float64 }{
		{0.5, 0.1},   // the 50th sample is the last of the first bucket
		{0.7, 0.3},   // halfway into (0.1, 0.5]
		{0.95, 0.75}, // halfway into (0.5, 1]
		{1, 1},
	} {
		if got := h.quantile(tc.q); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := (histogram{}).quantile(0.95); !math.IsNaN(got) {
		t.Errorf("quantile of no sample = %v, want NaN", got)
	}
	late := histogram{bounds: []float64{1, math.Inf(1)}, counts: []float64{0, 10}, count: 10}
	if got := late.quantile(0.95); got != 1 {
		t.Errorf("quantile in the +Inf bucket = %v, want the highest finite bound 1", got)
	}
	before := histogram{bounds: h.bounds, counts: []float64{50, 50, 50, 50}, count: 50}
	if got := h.minus(before).quantile(0.5); math.Abs(got-0.35) > 1e-9 {
		t.Errorf("quantile of the difference = %v, want 0.35 (the 25th of 50 later samples, 40 of them in (0.1, 0.5])", got)
	}
}
