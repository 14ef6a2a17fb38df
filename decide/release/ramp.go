package release

import (
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// The schema defaults of a release's steps. A field left at its zero value
// takes these, so a ReleaseInfo that never went through admission still ramps.
const (
	defaultIncrement int32 = 5
	defaultStart     int32 = 10
	defaultFactor    int32 = 2
	defaultStepDelay       = 10 * time.Second
)

// MaxPercent is the most traffic a build may take: release.max, where 0
// (unset) and anything above 100 mean 100.
func MaxPercent(r picchuv1alpha1.ReleaseInfo) int32 {
	return percentCap(r.Max)
}

// NextPercent returns the percent of traffic a build steps to from current.
//
//   - Above max it returns max at once: lowering max scales down immediately.
//   - At max it stays there.
//   - Linear adds increment; geometric multiplies by factor, or jumps to start
//     while current is below it. Either result is capped at max.
//
// Below max the result is always above current, so a ramp never stalls,
// whatever the stored spec holds. Fields at their zero value take the schema
// defaults (increment 5, start 10, factor 2); values admission rejects are
// raised to the nearest accepted one (increment and start at least 1, factor
// at least 2), so a factor of 1 or less doubles rather than stalling at start
// (the original's bug 22). A strategy other than linear ramps geometrically,
// the schema default.
func NextPercent(r picchuv1alpha1.ReleaseInfo, current int32) int32 {
	limit := MaxPercent(r)
	current = max(current, 0)
	if current >= limit {
		return limit
	}
	var next int64
	if r.ScalingStrategy == picchuv1alpha1.ScalingStrategyLinear {
		next = int64(current) + int64(increment(r.LinearScaling))
	} else {
		start, factor := geometric(r.GeometricScaling)
		next = int64(current) * int64(factor)
		if current < start {
			next = int64(start)
		}
	}
	// Progress is guaranteed even if the rules above ever stop providing it.
	next = max(next, int64(current)+1)
	return int32(min(next, int64(limit)))
}

// StepDelay returns how long a build stays at a percent before its next
// step: the delay of its strategy (geometric unless linear), 10 s when
// unset, never negative.
func StepDelay(r picchuv1alpha1.ReleaseInfo) time.Duration {
	d := r.GeometricScaling.Delay
	if r.ScalingStrategy == picchuv1alpha1.ScalingStrategyLinear {
		d = r.LinearScaling.Delay
	}
	if d == nil {
		return defaultStepDelay
	}
	return max(d.Duration, 0)
}

func increment(l picchuv1alpha1.LinearScaling) int32 {
	if l.Increment == 0 {
		return defaultIncrement
	}
	return max(l.Increment, 1)
}

func geometric(g picchuv1alpha1.GeometricScaling) (start, factor int32) {
	start, factor = g.Start, g.Factor
	if start == 0 {
		start = defaultStart
	}
	if factor == 0 {
		factor = defaultFactor
	}
	return max(start, 1), max(factor, 2)
}

// RampInput is what the next step of a build's ramp is decided from.
type RampInput struct {
	// Now is the time of the decision.
	Now time.Time
	// Release is the build's release settings.
	Release picchuv1alpha1.ReleaseInfo
	// Percent is the traffic the build takes now, and Changed when that
	// last changed (zero when never).
	Percent int32
	Changed time.Time
	// Hold stops every step up: a live cluster cannot be seen or reached,
	// and a release never advances on data it cannot see.
	Hold bool
	// Capacity is the capacity gate's input.
	Capacity CapacityInput
	// Paused holds the build at its percent (a person paused it), unless
	// Skip.
	Paused bool
	// Skip takes the next step now, without waiting out the step delay (a
	// promote request).
	Skip bool
	// Full steps straight to release.max, without waiting out the step
	// delay (a full promotion, or a rollback to this build).
	Full bool
	// Frozen stops every step up: a cluster of the build's wave is in a
	// freeze window (Waiting "frozen").
	Frozen bool
	// Preflight stops a step up: the build has no traffic in the wave yet
	// and a pre-flight check fails on one of its live clusters (Waiting
	// "preflight").
	Preflight bool
}

// RampStep is the decision of a ramp.
type RampStep struct {
	// Next is the percent the build may take now.
	Next int32
	// Due is when the next step up is due, when that is in the future.
	Due time.Time
	// Waiting says why a due step up is not taken: "capacity", "hold",
	// "frozen", "preflight" or "paused".
	Waiting string
	// WasDue is when the step up to Next was due, when it is one that
	// waited out a delay: how late it is taken is WasDue to when every
	// live cluster has it (picchu_release_step_lateness_seconds).
	WasDue time.Time
}

// Ramp decides the step of a ramping build. A step down to release.max
// happens at once. A step up to NextPercent (release.max when Full) happens
// when the build has held its percent for the step delay (at once from 0,
// or when Skip or Full), it is not Paused (unless Skip), nothing holds the
// fleet, and CanRampTo says the build has the replicas for it. Until the
// delay has passed, Due says when to decide again.
func Ramp(in RampInput) RampStep {
	current := max(in.Percent, 0)
	target := NextPercent(in.Release, current)
	if in.Full {
		target = MaxPercent(in.Release)
	}
	if target <= current {
		return RampStep{Next: target}
	}
	if in.Paused && !in.Skip {
		return RampStep{Next: current, Waiting: "paused"}
	}
	var wasDue time.Time
	if current > 0 && !in.Changed.IsZero() && !in.Skip && !in.Full {
		wasDue = in.Changed.Add(StepDelay(in.Release))
		if in.Now.Before(wasDue) {
			return RampStep{Next: current, Due: wasDue}
		}
	}
	if in.Hold {
		return RampStep{Next: current, Waiting: "hold"}
	}
	if in.Frozen {
		return RampStep{Next: current, Waiting: "frozen"}
	}
	if in.Preflight {
		return RampStep{Next: current, Waiting: "preflight"}
	}
	if !CanRampTo(in.Capacity, target) {
		return RampStep{Next: current, Waiting: "capacity"}
	}
	return RampStep{Next: target, WasDue: wasDue}
}
