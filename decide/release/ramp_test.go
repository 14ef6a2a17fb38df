package release

import (
	"testing"
	"testing/quick"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func linear(increment, maxPercent int32) picchuv1alpha1.ReleaseInfo {
	return picchuv1alpha1.ReleaseInfo{
		Max: maxPercent, ScalingStrategy: picchuv1alpha1.ScalingStrategyLinear,
		LinearScaling: picchuv1alpha1.LinearScaling{Increment: increment},
	}
}

func geometricRelease(start, factor, maxPercent int32) picchuv1alpha1.ReleaseInfo {
	return picchuv1alpha1.ReleaseInfo{
		Max: maxPercent, ScalingStrategy: picchuv1alpha1.ScalingStrategyGeometric,
		GeometricScaling: picchuv1alpha1.GeometricScaling{Start: start, Factor: factor},
	}
}

func TestNextPercent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		release picchuv1alpha1.ReleaseInfo
		current int32
		want    int32
	}{
		{"linear adds increment", linear(10, 100), 20, 30},
		{"linear starts from zero", linear(10, 100), 0, 10},
		{"linear is capped at max", linear(10, 50), 45, 50},
		{"linear stays at max", linear(10, 50), 50, 50},
		{"linear above max scales down at once", linear(10, 50), 80, 50},
		{"linear without increment uses the default 5", linear(0, 100), 20, 25},
		{"linear with a negative increment still moves by 1", linear(-3, 100), 20, 21},
		{"geometric jumps to start", geometricRelease(10, 2, 100), 0, 10},
		{"geometric jumps to start from below it", geometricRelease(10, 2, 100), 5, 10},
		{"geometric multiplies by factor", geometricRelease(10, 2, 100), 10, 20},
		{"geometric is capped at max", geometricRelease(10, 2, 100), 80, 100},
		{"geometric start is capped at max", geometricRelease(60, 2, 40), 0, 40},
		{"geometric above max scales down at once", geometricRelease(10, 2, 30), 100, 30},
		{"geometric factor 1 does not stall at start", geometricRelease(10, 1, 100), 10, 20},
		{"geometric factor 0 takes the default 2", geometricRelease(10, 0, 100), 10, 20},
		{"geometric negative factor does not stall", geometricRelease(10, -4, 100), 10, 20},
		{"geometric negative start starts at 1", geometricRelease(-5, 3, 100), 0, 1},
		{"geometric large factor does not overflow", geometricRelease(10, 1<<30, 100), 50, 100},
		{"empty release ramps geometrically with the defaults", picchuv1alpha1.ReleaseInfo{}, 0, 10},
		{"unknown strategy ramps geometrically", picchuv1alpha1.ReleaseInfo{ScalingStrategy: "cubic"}, 10, 20},
		{"max 0 means 100", geometricRelease(10, 2, 0), 80, 100},
		{"max above 100 means 100", geometricRelease(10, 2, 500), 80, 100},
		{"negative current counts as zero", linear(10, 100), -40, 10},
		{"current above 100 with no max scales down to 100", linear(10, 0), 150, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextPercent(tc.release, tc.current); got != tc.want {
				t.Errorf("NextPercent(%+v, %d) = %d, want %d", tc.release, tc.current, got, tc.want)
			}
		})
	}
}

// TestNextPercent_Progresses checks, for any spec, that a step stays within
// [current, max], moves up whenever below max, and goes to max from above it.
func TestNextPercent_Progresses(t *testing.T) {
	// int8 covers below 0, [0, 100] and above 100 evenly; tables cover overflow.
	prop := func(linearStrategy bool, increment, start, factor, maxPercent, current8 int8) bool {
		r := geometricRelease(int32(start), int32(factor), int32(maxPercent))
		if linearStrategy {
			r = linear(int32(increment), int32(maxPercent))
		}
		limit, current := MaxPercent(r), int32(current8)
		next := NextPercent(r, current)
		switch {
		case current >= limit:
			return next == limit
		case current < 0:
			return next > 0 && next <= limit
		default:
			return next > current && next <= limit
		}
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 10000}); err != nil {
		t.Error(err)
	}
}

// TestNextPercent_ReachesMax checks that repeated steps reach max in at most
// 100 steps for any spec: no ramp loops or stalls.
func TestNextPercent_ReachesMax(t *testing.T) {
	prop := func(linearStrategy bool, increment, start, factor, maxPercent int8) bool {
		r := geometricRelease(int32(start), int32(factor), int32(maxPercent))
		if linearStrategy {
			r = linear(int32(increment), int32(maxPercent))
		}
		p := int32(0)
		for range 100 {
			p = NextPercent(r, p)
		}
		return p == MaxPercent(r)
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 2000}); err != nil {
		t.Error(err)
	}
}

func TestStepDelay(t *testing.T) {
	d := func(s time.Duration) *metav1.Duration { return &metav1.Duration{Duration: s} }
	for _, tc := range []struct {
		name    string
		release picchuv1alpha1.ReleaseInfo
		want    time.Duration
	}{
		{"linear uses its delay", picchuv1alpha1.ReleaseInfo{
			ScalingStrategy:  picchuv1alpha1.ScalingStrategyLinear,
			LinearScaling:    picchuv1alpha1.LinearScaling{Delay: d(time.Minute)},
			GeometricScaling: picchuv1alpha1.GeometricScaling{Delay: d(time.Hour)},
		}, time.Minute},
		{"geometric uses its delay", picchuv1alpha1.ReleaseInfo{
			ScalingStrategy:  picchuv1alpha1.ScalingStrategyGeometric,
			LinearScaling:    picchuv1alpha1.LinearScaling{Delay: d(time.Minute)},
			GeometricScaling: picchuv1alpha1.GeometricScaling{Delay: d(time.Hour)},
		}, time.Hour},
		{"no strategy is geometric", picchuv1alpha1.ReleaseInfo{
			GeometricScaling: picchuv1alpha1.GeometricScaling{Delay: d(5 * time.Minute)},
		}, 5 * time.Minute},
		{"unset delay is 10s", picchuv1alpha1.ReleaseInfo{ScalingStrategy: picchuv1alpha1.ScalingStrategyLinear}, 10 * time.Second},
		{"zero delay is kept", picchuv1alpha1.ReleaseInfo{GeometricScaling: picchuv1alpha1.GeometricScaling{Delay: d(0)}}, 0},
		{"negative delay is zero", picchuv1alpha1.ReleaseInfo{GeometricScaling: picchuv1alpha1.GeometricScaling{Delay: d(-time.Second)}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StepDelay(tc.release); got != tc.want {
				t.Errorf("StepDelay() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRamp(t *testing.T) {
	two := int32(2)
	enough := CapacityInput{ScaleMin: &two, ScaleMax: 2, LiveClusters: 2, Available: 2}
	short := enough
	short.Available = 0
	geo := picchuv1alpha1.ReleaseInfo{GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2, Delay: &metav1.Duration{Duration: time.Minute}}}
	for _, tc := range []struct {
		name string
		in   RampInput
		want RampStep
	}{
		{"from 0 at once", RampInput{Now: t0, Release: geo, Changed: t0, Capacity: enough}, RampStep{Next: 10}},
		{"waits for the delay", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0.Add(-59 * time.Second), Capacity: enough},
			RampStep{Next: 10, Due: t0.Add(time.Second)}},
		{"steps when due", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0.Add(-time.Minute), Capacity: enough},
			RampStep{Next: 20, WasDue: t0}},
		{"steps late, and says since when it was due", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0.Add(-90 * time.Second), Capacity: enough},
			RampStep{Next: 20, WasDue: t0.Add(-30 * time.Second)}},
		{"a missing timestamp steps", RampInput{Now: t0, Release: geo, Percent: 10, Capacity: enough}, RampStep{Next: 20}},
		{"held", RampInput{Now: t0, Release: geo, Percent: 10, Hold: true, Capacity: enough}, RampStep{Next: 10, Waiting: "hold"}},
		{"the delay comes before the hold", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Hold: true, Capacity: enough},
			RampStep{Next: 10, Due: t0.Add(time.Minute)}},
		{"waits for capacity", RampInput{Now: t0, Release: geo, Percent: 10, Capacity: short}, RampStep{Next: 10, Waiting: "capacity"}},
		{"at 100 stays", RampInput{Now: t0, Release: geo, Percent: 100, Capacity: short}, RampStep{Next: 100}},
		{"above max comes down at once, held or not", RampInput{Now: t0, Release: picchuv1alpha1.ReleaseInfo{Max: 30}, Percent: 50, Changed: t0, Hold: true},
			RampStep{Next: 30}},
		{"paused holds a due step", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0.Add(-time.Hour), Paused: true, Capacity: enough},
			RampStep{Next: 10, Waiting: "paused"}},
		{"paused still comes down to max", RampInput{Now: t0, Release: picchuv1alpha1.ReleaseInfo{Max: 30}, Percent: 50, Paused: true},
			RampStep{Next: 30}},
		{"a promotion takes the next step before its delay", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Skip: true, Capacity: enough},
			RampStep{Next: 20}},
		{"a promotion takes a paused build's next step", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Paused: true, Skip: true, Capacity: enough},
			RampStep{Next: 20}},
		{"a promotion waits for capacity", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Skip: true, Capacity: short},
			RampStep{Next: 10, Waiting: "capacity"}},
		{"a promotion waits while a cluster cannot be seen", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Skip: true, Hold: true, Capacity: enough},
			RampStep{Next: 10, Waiting: "hold"}},
		{"full goes straight to max", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Full: true, Capacity: enough},
			RampStep{Next: 100}},
		{"full goes straight to a lower max", RampInput{Now: t0, Release: picchuv1alpha1.ReleaseInfo{Max: 60}, Percent: 20, Changed: t0, Full: true, Capacity: enough},
			RampStep{Next: 60}},
		{"full waits for capacity", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Full: true, Capacity: short},
			RampStep{Next: 10, Waiting: "capacity"}},
		{"frozen holds a due step", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0.Add(-time.Hour), Frozen: true, Capacity: enough},
			RampStep{Next: 10, Waiting: "frozen"}},
		{"frozen holds a promotion too", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Skip: true, Frozen: true, Capacity: enough},
			RampStep{Next: 10, Waiting: "frozen"}},
		{"frozen still comes down to max", RampInput{Now: t0, Release: picchuv1alpha1.ReleaseInfo{Max: 30}, Percent: 50, Frozen: true},
			RampStep{Next: 30}},
		{"a failed pre-flight check holds the first step", RampInput{Now: t0, Release: geo, Percent: 0, Preflight: true, Capacity: enough},
			RampStep{Next: 0, Waiting: "preflight"}},
		{"a failed pre-flight check holds a full promotion", RampInput{Now: t0, Release: geo, Percent: 0, Full: true, Preflight: true, Capacity: enough},
			RampStep{Next: 0, Waiting: "preflight"}},
		{"a failed pre-flight check still comes down to max", RampInput{Now: t0, Release: picchuv1alpha1.ReleaseInfo{Max: 30}, Percent: 50, Preflight: true},
			RampStep{Next: 30}},
		{"full but paused holds", RampInput{Now: t0, Release: geo, Percent: 10, Changed: t0, Full: true, Paused: true, Capacity: enough},
			RampStep{Next: 10, Waiting: "paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ramp(tc.in); got != tc.want {
				t.Errorf("Ramp() = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzRamp: a ramp never panics, never goes above release.max, never steps
// up before the delay has passed, while held, or without the capacity.
func FuzzRamp(f *testing.F) {
	f.Add(int32(10), int32(100), int32(2), int64(1), int64(0), int64(0), false, int32(2), int32(2))
	f.Add(int32(0), int32(30), int32(1), int64(-5), int64(3), int64(2), true, int32(0), int32(-1))
	f.Fuzz(func(t *testing.T, percent, maxPercent, factor int32, delay, changed, now int64, hold bool, min, available int32) {
		rel := picchuv1alpha1.ReleaseInfo{Max: maxPercent, GeometricScaling: picchuv1alpha1.GeometricScaling{
			Start: 10, Factor: factor, Delay: &metav1.Duration{Duration: time.Duration(delay) * time.Second}}}
		in := RampInput{
			Now: time.Unix(now, 0), Release: rel, Percent: percent, Changed: time.Unix(changed, 0), Hold: hold,
			Capacity: CapacityInput{ScaleMin: &min, ScaleMax: min, LiveClusters: 2, Available: available},
		}
		got := Ramp(in)
		if got.Next < 0 || got.Next > MaxPercent(rel) {
			t.Fatalf("Ramp(%+v) = %+v: outside [0, max]", in, got)
		}
		if got.Next > max(percent, 0) {
			early := percent > 0 && in.Now.Before(in.Changed.Add(StepDelay(rel)))
			if early || hold || !CanRampTo(in.Capacity, got.Next) {
				t.Fatalf("Ramp(%+v) = %+v: stepped up early, held or short of capacity", in, got)
			}
		}
	})
}
