package release

import (
	"math"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Autoscaler kinds, as the ReplicaSet annotation picchu.medium.engineering/autoscaler names them.
const (
	AutoscalerHPA  = "hpa"
	AutoscalerKEDA = "keda"
	AutoscalerWPA  = "wpa"
)

// AutoscalerKind is the autoscaler a build's scale settings ask for, the
// first that applies as in the original: the worker pod autoscaler
// (scale.worker), KEDA (scale.kedaWorker), an HorizontalPodAutoscaler (a
// CPU, memory or request-rate target), or none ("").
func AutoscalerKind(s picchuv1alpha1.ScaleInfo) string {
	switch {
	case s.Worker != nil:
		return AutoscalerWPA
	case s.KedaWorker != nil:
		return AutoscalerKEDA
	case s.TargetCPUUtilizationPercentage != nil || s.TargetMemoryUtilizationPercentage != nil ||
		(s.TargetRequestsRate != nil && s.RequestsRateMetric != ""):
		return AutoscalerHPA
	}
	return ""
}

// Ramping is the one place that says whether Picchu, rather than a build's
// autoscaler, sizes the build: it has an autoscaler and is canarying or
// releasing. Both the ReplicaSet plan and the autoscaler plans read the
// answer from ScalePlan.Ramping, computed once per build and run.
func Ramping(state State, autoscaler string) bool {
	return autoscaler != "" && (state == Canarying || state == Releasing)
}

// DefaultReplicas is a build's fleet-wide replica count without an
// autoscaler: scale.default, else scale.min (the original defaulted to 1
// even with a min, and ramps stalled at 1 to 4 pods), else 1.
func DefaultReplicas(s picchuv1alpha1.ScaleInfo) int32 {
	switch {
	case s.Default > 0:
		return s.Default
	case s.Min != nil && *s.Min > 0:
		return *s.Min
	}
	return 1
}

// AutoscalerRange is the fleet-wide replica range of a build's autoscaler:
// scale.min (at least 1, as an HPA needs) to scale.max (at least the min).
func AutoscalerRange(s picchuv1alpha1.ScaleInfo) (lo, hi int32) {
	lo = 1
	if s.Min != nil && *s.Min > 1 {
		lo = *s.Min
	}
	return lo, max(s.Max, lo)
}

// ScaleInput is what a build's sizing is decided from.
type ScaleInput struct {
	// Step is the build's decided step of this run.
	Step Step
	// Scale is the build's scale settings.
	Scale picchuv1alpha1.ScaleInfo
	// Release and Canary give the traffic the build ramps to next.
	Release picchuv1alpha1.ReleaseInfo
	Canary  int32
	// Percent is the build's traffic after this run.
	Percent int32
	// Others are the other builds serving in the target (traffic and
	// available pods, fleet total), as the capacity gate sees them.
	Others []Serving
	// Factors are the scaling factors of the fleet's live clusters.
	Factors []float64
	// Desired is the pods the build is asked to run now (its ReplicaSets'
	// replicas over the live clusters): a ramp never shrinks it.
	Desired int32
	// TakingBack says the build takes traffic back from a failing one (it
	// is the ramping build of a rollback): it ramps, whatever its state.
	TakingBack bool
	// Full says the build ramps straight to release.max (RampInput.Full),
	// so it is sized for that.
	Full bool
}

// ScalePlan is how a build is sized on the fleet this run.
type ScalePlan struct {
	// Kind is the build's autoscaler kind, "" for none.
	Kind string
	// Ramping says Picchu sizes the build while it ramps: its autoscaler
	// is removed, and its ReplicaSet marked picchu.medium.engineering/ramping.
	Ramping bool
	// Autoscaler says the build's autoscaler is wanted, over Min..Max
	// (fleet totals). When false, it is deleted.
	Autoscaler bool
	Min, Max   int32
	// SetReplicas says Picchu writes the ReplicaSet's replicas, Replicas
	// for the whole fleet. When false the autoscaler owns them and Picchu
	// never writes them, so the two never fight.
	SetReplicas bool
	Replicas    int32
}

// Scale sizes a build for this run. In order:
//
//   - retired (or retiring with no traffic left): 0 replicas, no autoscaler;
//   - no autoscaler: DefaultReplicas;
//   - ramping (canarying or releasing, or taking traffic back from a
//     failing build): no autoscaler; Picchu sets the replicas the next step
//     needs, RampReplicas (its autoscaler alone would never grow it for
//     traffic the capacity gate holds back until it has the pods);
//   - created or deploying: the autoscaler, and Picchu sets its min so the
//     build comes up at once rather than at the autoscaler's next sync;
//   - otherwise (deployed, tested, canaried, pending release, released,
//     failing, retiring with traffic): the autoscaler over its whole range,
//     and Picchu leaves the replicas to it. A released build is never
//     pinned; a build that fails while ramping gets its autoscaler back,
//     starting from the replicas Picchu last set.
func Scale(in ScaleInput) ScalePlan {
	p := ScalePlan{Kind: AutoscalerKind(in.Scale)}
	p.Min, p.Max = AutoscalerRange(in.Scale)
	switch {
	case in.Step.Action == Retire || in.Step.Action == Delete:
		p.SetReplicas, p.Replicas = true, 0
	case p.Kind == "":
		p.SetReplicas, p.Replicas = true, DefaultReplicas(in.Scale)
	case Ramping(in.Step.State, p.Kind) || (in.TakingBack && p.Kind != ""):
		p.Ramping, p.SetReplicas = true, true
		p.Replicas = RampReplicas(in)
	case in.Step.State == Created || in.Step.State == Deploying || in.Step.State == "":
		p.Autoscaler, p.SetReplicas, p.Replicas = true, true, p.Min
	default:
		p.Autoscaler = true
	}
	return p
}

// RampReplicas is the fleet-wide replica count of a ramping build: enough
// for the traffic it takes next (its canary percent while canarying, else
// its next step) out of the target's base capacity (BaseCapacity: the other
// builds' pods, never its own, so there is no feedback loop), counted as
// the capacity gate counts it (after the per-cluster rounding and scaling
// factors), so that once they are available the gate lets the step
// through. The base is at least its autoscaler's min; the count is at least
// 1, at least what the build is asked to run now (a ramp never shrinks a
// build: its own pods are a floor, never part of the base, so they cannot
// feed back into the count), and at most scale.max.
func RampReplicas(in ScaleInput) int32 {
	lo, hi := AutoscalerRange(in.Scale)
	next := in.Percent
	switch {
	case in.Step.State == Canarying:
		next = max(next, in.Canary)
	case in.Step.State == Releasing || in.TakingBack:
		next = max(next, NextPercent(in.Release, in.Percent))
		if in.Full {
			next = max(next, MaxPercent(in.Release))
		}
	}
	next = clampPercent(next)
	base := max(BaseCapacity(in.Scale.Min, hi, true, in.Others, in.Factors), lo)
	need := ceilDiv(int64(FleetReplicas(base, in.Factors))*int64(next), 100)
	r := int32(max(ceilDiv(int64(base)*int64(next), 100), 1))
	for r < hi && int64(FleetReplicas(r, in.Factors)) < need {
		r++
	}
	r = max(r, int32(min(unfactor(int64(max(in.Desired, 0)), in.Factors), math.MaxInt32)))
	return min(r, hi)
}

// BaseCapacity is the fleet-wide replica count the target needs at 100 % of
// its traffic, in replicas before scaling factors (what scale.min and
// scale.max count):
//
//   - no other build serves (with traffic and pods): scale.min, or
//     scale.max when min is 0 and the build has an autoscaler (a worker
//     that scales to zero still needs capacity to take traffic);
//   - another build is unscaled (recommissioned): its pods; for a build
//     without an autoscaler, scale.min instead (scale.max when min is 0);
//   - otherwise the other builds' pods scaled up to 100 % of the traffic:
//     ceil(pods ÷ (their percent ÷ 100)).
//
// Pods are counted on clusters that multiply replicas by their scaling
// factors, so they are divided by the fleet's mean factor first: counting
// the factors twice (the original did) asks heterogeneous fleets for the
// wrong capacity.
func BaseCapacity(scaleMin *int32, scaleMax int32, hasAutoscaler bool, others []Serving, factors []float64) int32 {
	lo := int32(0)
	if scaleMin != nil {
		lo = max(*scaleMin, 0)
	}
	var pods, traffic int64
	unscaled := false
	for _, o := range others {
		if o.Percent <= 0 || o.Pods <= 0 {
			continue
		}
		pods += int64(o.Pods)
		traffic += int64(o.Percent)
		unscaled = unscaled || o.Unscaled
	}
	pods = unfactor(pods, factors)
	switch {
	case pods == 0 && lo == 0 && hasAutoscaler:
		return max(scaleMax, 0)
	case pods == 0:
		return lo
	case unscaled && !hasAutoscaler && lo == 0:
		return max(scaleMax, 0)
	case unscaled && !hasAutoscaler:
		return lo
	case unscaled:
		return int32(min(pods, math.MaxInt32))
	default:
		return int32(min(ceilDiv(100*pods, min(traffic, 100)), math.MaxInt32))
	}
}

// unfactor turns pods counted on the fleet's clusters into replicas before
// scaling factors: pods × clusters ÷ Σ factors, rounded up. Without
// clusters, or when every factor is 0, pods are returned as they are.
func unfactor(pods int64, factors []float64) int64 {
	var sum float64
	for _, f := range factors {
		if f > 0 {
			sum += f
		}
	}
	if pods == 0 || len(factors) == 0 || sum == 0 {
		return pods
	}
	return int64(math.Ceil(float64(pods) * float64(len(factors)) / sum))
}

// Idle is the plan of a build on a cluster that runs none of it (an
// event-driven build where event-driven builds are disabled): Picchu sets
// its replicas to 0 there, and its autoscaler is removed.
func Idle() ScalePlan { return ScalePlan{SetReplicas: true} }
