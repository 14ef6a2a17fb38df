package release

import (
	"math"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func ptr32(v int32) *int32 { return &v }

var cpu70 = ptr32(70)

// hpa is a build scaled by an HPA between min and max.
func hpa(min, max int32) picchuv1alpha1.ScaleInfo {
	return picchuv1alpha1.ScaleInfo{Min: ptr32(min), Max: max, TargetCPUUtilizationPercentage: cpu70}
}

func doubling() picchuv1alpha1.ReleaseInfo {
	return picchuv1alpha1.ReleaseInfo{Max: 100, GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2}}
}

// TestScale_OverAllocationCap: a ramping build is sized from the other
// builds' pods only, never its own (the reverted change fed its own pods
// back into the total and grew a 100-pod service to 232), and never above
// scale.max.
func TestScale_OverAllocationCap(t *testing.T) {
	in := ScaleInput{
		Step: Step{State: Releasing}, Scale: hpa(10, 500), Release: doubling(), Percent: 80,
		Others: []Serving{{Percent: 20, Pods: 90}}, Factors: []float64{1},
	}
	// The old build serves 20 % with 90 pods: 450 at 100 %; the next step is 100 %.
	if got := Scale(in).Replicas; got != 450 {
		t.Errorf("replicas %d, want 450 (the others' pods scaled to 100 %%)", got)
	}
	in.Scale.Max = 300
	if got := Scale(in).Replicas; got != 300 {
		t.Errorf("replicas %d, want scale.max 300", got)
	}
	// Whatever the build already runs, the answer is the same: there is no
	// input for its own pods, so no feedback loop.
	for _, others := range [][]Serving{{{Percent: 1, Pods: 1 << 30}}, {{Percent: 100, Pods: 1 << 30}, {Percent: 50, Pods: 7}}} {
		in.Others = others
		if got := Scale(in).Replicas; got > in.Scale.Max {
			t.Errorf("others %v: replicas %d above scale.max %d", others, got, in.Scale.Max)
		}
	}
}

// TestScale_RampNeverShrinksABuild: a build that came up at its
// autoscaler's min keeps those pods while it ramps, even when its next step
// needs fewer; its own pods are a floor, never part of the base, and
// scale.max still caps them.
func TestScale_RampNeverShrinksABuild(t *testing.T) {
	in := ScaleInput{
		Step: Step{State: Releasing}, Scale: hpa(40, 80), Release: doubling(), Percent: 10,
		Others: []Serving{{Percent: 100, Pods: 60}}, Factors: []float64{1, 2}, Desired: 60,
	}
	// Its 60 pods on clusters with factors 1 and 2 are 40 replicas.
	if got := Scale(in).Replicas; got != 40 {
		t.Errorf("replicas %d, want the 40 it runs (the next step needs 8)", got)
	}
	in.Desired = 600
	if got := Scale(in).Replicas; got != 80 {
		t.Errorf("replicas %d, want scale.max 80", got)
	}
}

// TestScale_DefaultChange: scale.default falls back to scale.min, not 1
// (apps with min 16, max 96 and no default ramped at 1 to 4 pods).
func TestScale_DefaultChange(t *testing.T) {
	for _, tc := range []struct {
		scale picchuv1alpha1.ScaleInfo
		want  int32
	}{
		{picchuv1alpha1.ScaleInfo{Min: ptr32(16), Max: 96}, 16},
		{picchuv1alpha1.ScaleInfo{Min: ptr32(16), Default: 20, Max: 96}, 20},
		{picchuv1alpha1.ScaleInfo{Min: ptr32(0), Max: 96}, 1},
		{picchuv1alpha1.ScaleInfo{}, 1},
	} {
		if got := DefaultReplicas(tc.scale); got != tc.want {
			t.Errorf("DefaultReplicas(%+v) = %d, want %d", tc.scale, got, tc.want)
		}
		in := ScaleInput{Step: Step{State: Released}, Scale: tc.scale}
		if p := Scale(in); !p.SetReplicas || p.Replicas != tc.want {
			t.Errorf("%+v without autoscaler: %+v", tc.scale, p)
		}
	}
}

// TestScale_ConditionOrdering: retirement wins over everything; only
// canarying and releasing builds with an autoscaler ramp; a released build
// keeps its autoscaler over its whole range and is never pinned, even when
// other builds run more pods than it.
func TestScale_ConditionOrdering(t *testing.T) {
	others := []Serving{{Percent: 50, Pods: 200}}
	for _, tc := range []struct {
		name string
		step Step
		want ScalePlan
	}{
		{"retire", Step{State: Retiring, Action: Retire}, ScalePlan{Kind: "hpa", SetReplicas: true, Replicas: 0, Min: 40, Max: 400}},
		{"retired", Step{State: Retired, Action: Retire}, ScalePlan{Kind: "hpa", SetReplicas: true, Replicas: 0, Min: 40, Max: 400}},
		{"deleting", Step{State: Deleting, Action: Delete}, ScalePlan{Kind: "hpa", SetReplicas: true, Replicas: 0, Min: 40, Max: 400}},
		{"deploying: autoscaler, starts at its min", Step{State: Deploying, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, SetReplicas: true, Replicas: 40, Min: 40, Max: 400}},
		{"deployed", Step{State: Deployed, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, Min: 40, Max: 400}},
		{"canaried", Step{State: Canaried, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, Min: 40, Max: 400}},
		{"canarying ramps", Step{State: Canarying, Action: Sync}, ScalePlan{Kind: "hpa", Ramping: true, SetReplicas: true, Replicas: 40, Min: 40, Max: 400}},
		{"releasing ramps", Step{State: Releasing, Action: Sync}, ScalePlan{Kind: "hpa", Ramping: true, SetReplicas: true, Replicas: 80, Min: 40, Max: 400}},
		{"released keeps its HPA, never pinned", Step{State: Released, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, Min: 40, Max: 400}},
		{"failing gets its HPA back", Step{State: Failing, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, Min: 40, Max: 400}},
		{"retiring with traffic keeps its HPA", Step{State: Retiring, Action: Sync}, ScalePlan{Kind: "hpa", Autoscaler: true, Min: 40, Max: 400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Scale(ScaleInput{Step: tc.step, Scale: hpa(40, 400), Release: doubling(), Canary: 10, Percent: 10, Others: others, Factors: []float64{1, 1}})
			if got != tc.want {
				t.Errorf("Scale = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestScale_MinZeroFallback: a worker with scale.min 0 and no other build
// serving sizes its ramp from scale.max rather than stalling at 1 or 2
// pods, and the capacity gate asks for the same.
func TestScale_MinZeroFallback(t *testing.T) {
	keda := picchuv1alpha1.ScaleInfo{Min: ptr32(0), Max: 60, KedaWorker: &picchuv1alpha1.KedaScaleInfo{}}
	in := ScaleInput{Step: Step{State: Releasing}, Scale: keda, Release: doubling(), Percent: 10, Factors: []float64{1}}
	if got := Scale(in).Replicas; got != 12 {
		t.Errorf("ramping to 20 %% of scale.max 60: %d replicas, want 12", got)
	}
	if got := BaseCapacity(keda.Min, keda.Max, true, nil, nil); got != 60 {
		t.Errorf("base capacity %d, want scale.max", got)
	}
	gate := CapacityInput{ScaleMin: keda.Min, ScaleMax: 60, HasAutoscaler: true, LiveClusters: 1, Available: 10}
	if CanRampTo(gate, 20) {
		t.Error("10 pods pass the gate for 20 % of 60")
	}
	gate.Available = 11
	if !CanRampTo(gate, 20) {
		t.Error("11 pods (90 % of 12) do not pass the gate for 20 % of 60")
	}
}

// TestScale_MultiClusterHeterogeneousScaling: pods counted on clusters with
// scaling factors 1 and 2 are divided by the mean factor before the factors
// are applied again, so the gate and the ramp ask for what the fleet needs
// (the original counted the factors twice and stalled).
func TestScale_MultiClusterHeterogeneousScaling(t *testing.T) {
	factors := []float64{1, 2}
	// The old build runs 20 replicas: 10 on the first cluster, 20 on the second.
	others := []Serving{{Percent: 100, Pods: 30}}
	if got := BaseCapacity(ptr32(2), 100, true, others, factors); got != 20 {
		t.Fatalf("base capacity %d, want 20 replicas before factors", got)
	}
	if got := FleetReplicas(20, factors); got != 30 {
		t.Fatalf("fleet replicas %d, want the 30 pods back", got)
	}
	gate := CapacityInput{ScaleMin: ptr32(2), ScaleMax: 100, HasAutoscaler: true, Others: others, LiveClusters: 2, Factors: factors}
	gate.Available = 27 // 90 % of 30
	if !CanRampTo(gate, 100) {
		t.Error("27 of 30 pods do not pass the gate for 100 %")
	}
	gate.Available = 26
	if CanRampTo(gate, 100) {
		t.Error("26 pods pass the gate for 100 %")
	}
	in := ScaleInput{Step: Step{State: Releasing}, Scale: hpa(2, 100), Release: doubling(), Percent: 80, Others: []Serving{{Percent: 20, Pods: 6}}, Factors: factors}
	// 6 pods at 20 % are 4 replicas before factors, 20 at 100 %.
	if got := Scale(in).Replicas; got != 20 {
		t.Errorf("ramp replicas %d, want 20", got)
	}
}

// TestScale_FailureDuringRamp: a build that fails while Picchu sizes it
// gets its autoscaler back over its whole range, starting from the
// replicas Picchu last set (Picchu stops writing them); once its traffic is
// gone it retires to 0.
func TestScale_FailureDuringRamp(t *testing.T) {
	base := ScaleInput{Scale: hpa(4, 40), Release: doubling(), Percent: 40, Others: []Serving{{Percent: 60, Pods: 30}}, Factors: []float64{1}}
	ramping := base
	ramping.Step = Step{State: Releasing, Action: Sync}
	if p := Scale(ramping); !p.Ramping || p.Autoscaler || !p.SetReplicas {
		t.Fatalf("ramping: %+v", p)
	}
	failing := base
	failing.Step = Step{State: Failing, Action: Sync}
	if p := Scale(failing); p.Ramping || !p.Autoscaler || p.SetReplicas || p.Min != 4 || p.Max != 40 {
		t.Errorf("failing: %+v, want the autoscaler back over 4..40 and the replicas left to it", p)
	}
	failing.Step, failing.Percent = Step{State: Failing, Action: Retire, Then: Failed}, 0
	if p := Scale(failing); p.Autoscaler || !p.SetReplicas || p.Replicas != 0 {
		t.Errorf("failed: %+v, want 0 replicas and no autoscaler", p)
	}
}

// TestScale_SingleRampingComputation: Scale's Ramping is Ramping(state,
// kind) for every state and kind, so the ReplicaSet and the autoscaler
// plans, which both read ScalePlan, never disagree.
func TestScale_SingleRampingComputation(t *testing.T) {
	for _, scale := range []picchuv1alpha1.ScaleInfo{{}, hpa(1, 5),
		{Worker: &picchuv1alpha1.WorkerScaleInfo{}}, {KedaWorker: &picchuv1alpha1.KedaScaleInfo{}}} {
		for _, state := range States() {
			p := Scale(ScaleInput{Step: Step{State: state, Action: Sync}, Scale: scale, Release: doubling(), Factors: []float64{1}})
			if p.Ramping != Ramping(state, AutoscalerKind(scale)) {
				t.Errorf("%s %+v: plan ramping %v", state, scale, p.Ramping)
			}
			if p.Ramping && p.Autoscaler {
				t.Errorf("%s: ramping with the autoscaler kept", state)
			}
			if !p.SetReplicas && !p.Autoscaler {
				t.Errorf("%s: nobody sizes the build: %+v", state, p)
			}
		}
	}
}

// FuzzScale: never above scale.max while ramping, never a negative count,
// and always someone (Picchu or the autoscaler) sizes the build.
func FuzzScale(f *testing.F) {
	f.Add(int32(2), int32(10), int32(0), int32(50), int32(100), int32(30), 1.0, 2.0, uint8(3))
	f.Add(int32(0), int32(0), int32(5), int32(-1), int32(1<<30), int32(0), 0.0, 3.5, uint8(9))
	f.Fuzz(func(t *testing.T, min, max, def, percent, pods, otherPercent int32, f1, f2 float64, state uint8) {
		states := States()
		scale := picchuv1alpha1.ScaleInfo{Min: &min, Max: max, Default: def, TargetCPUUtilizationPercentage: cpu70}
		in := ScaleInput{
			Step: Step{State: states[int(state)%len(states)], Action: Sync}, Scale: scale, Release: doubling(),
			Percent: percent, Canary: percent / 2, Others: []Serving{{Percent: otherPercent, Pods: pods}}, Factors: []float64{f1, f2},
		}
		p := Scale(in)
		_, hi := AutoscalerRange(scale)
		if p.Replicas < 0 || (p.Ramping && p.Replicas > hi) {
			t.Fatalf("%+v -> %+v", in, p)
		}
		if !p.SetReplicas && !p.Autoscaler {
			t.Fatalf("nobody sizes %+v", in)
		}
		// Once the pods Picchu asks for are available, the capacity gate
		// lets the step they are for through: a ramp never stalls on its own
		// allocation.
		if p.Ramping && in.Step.State == Releasing && !math.IsNaN(f1) && !math.IsNaN(f2) {
			gate := CapacityInput{
				ScaleMin: &min, ScaleMax: hi, HasAutoscaler: true, Others: in.Others,
				LiveClusters: 2, Factors: in.Factors, Available: FleetReplicas(p.Replicas, in.Factors),
			}
			if next := NextPercent(in.Release, in.Percent); !CanRampTo(gate, next) {
				t.Fatalf("%d replicas (%d pods) do not pass the gate to %d%%: %+v", p.Replicas, gate.Available, next, in)
			}
		}
	})
}

// TestScale_TakingTrafficBack: the released build that takes a failing
// build's traffic back ramps: Picchu sizes it for its next step from the
// failing build's pods, as the capacity gate counts them (its autoscaler
// alone, at its min while the traffic is held back, would never grow it),
// and hands it back to its autoscaler once the rollback is over.
func TestScale_TakingTrafficBack(t *testing.T) {
	in := ScaleInput{
		Step: Step{State: Released, Action: Sync}, Scale: hpa(2, 6), Release: doubling(), Percent: 60,
		Others: []Serving{{Percent: 40, Pods: 2}}, Factors: []float64{1, 1}, Desired: 2, TakingBack: true,
	}
	// 2 pods at 40 % are 5 at 100 %; the next step is 100 %: 5, over two clusters 3 each.
	p := Scale(in)
	if !p.Ramping || p.Autoscaler || !p.SetReplicas || p.Replicas != 5 {
		t.Errorf("plan %+v, want ramping at 5 replicas without its autoscaler", p)
	}
	capacity := CapacityInput{ScaleMin: ptr32(2), ScaleMax: 6, HasAutoscaler: true, Others: in.Others,
		LiveClusters: 2, Factors: in.Factors, Available: FleetReplicas(p.Replicas, in.Factors)}
	if !CanRampTo(capacity, 100) {
		t.Errorf("its replicas once available (%d) do not pass the capacity gate for 100 %%", capacity.Available)
	}
	in.TakingBack = false
	if p := Scale(in); p.Ramping || !p.Autoscaler || p.SetReplicas {
		t.Errorf("after the rollback: plan %+v, want the autoscaler owning the replicas", p)
	}
}
