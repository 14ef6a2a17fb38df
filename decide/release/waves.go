package release

import "time"

// A target may release in waves: ordered groups of its clusters. A build
// canaries in the first wave only, ramps there to its release.max, then, once
// the next wave's bake has passed, ramps in the next wave, and so on; the
// waves it has not reached keep the traffic they had. Everything else (a
// rollback, a build retiring) moves in every wave at once. Without waves a
// target is one wave, and every function here does what it does for the
// fleet as a whole.

// WaveInput is what the wave of a releasing build is decided from.
type WaveInput struct {
	Now time.Time
	// Wave is the wave the build ramps in as recorded, Waves how many
	// waves the target has.
	Wave, Waves int
	// Started is when the build entered Wave.
	Started time.Time
	// Percent is the traffic the build takes in Wave's clusters, as
	// recorded; Max is its release.max.
	Percent, Max int32
	// Bakes are the waves' bake times, in wave order: a build enters wave
	// k+1 once released in wave k, and ramps there Bakes[k] later.
	Bakes []time.Duration
	// Rereleased says the build starts releasing having been released
	// before (a recommissioned build): it is released in every wave at
	// once, with no bake.
	Rereleased bool
}

// WaveStep is the wave of a releasing build after a decision.
type WaveStep struct {
	// Wave is the wave it ramps in, and Started when it entered it.
	Wave    int
	Started time.Time
	// Baking is the end of the bake before its ramp in Wave may start,
	// while that is in the future.
	Baking time.Time
}

// NextWave decides the wave of a releasing build: it moves on from a wave
// where it has reached its release.max, and bakes in the new one. The last
// wave is the last: it stays there once released.
func NextWave(in WaveInput) WaveStep {
	last := max(in.Waves-1, 0)
	if in.Rereleased {
		return WaveStep{Wave: last}
	}
	out := WaveStep{Wave: min(max(in.Wave, 0), last), Started: in.Started}
	if out.Wave < last && in.Percent >= percentCap(in.Max) {
		out.Wave++
		out.Started = in.Now
	}
	if out.Wave > 0 && out.Wave-1 < len(in.Bakes) {
		if end := out.Started.Add(in.Bakes[out.Wave-1]); in.Now.Before(end) {
			out.Baking = end
		}
	}
	return out
}

// WaveBuild is a build as the traffic decision of a release in waves sees
// it: its Incarnation (State, Canary, Max) and, per wave, its traffic.
type WaveBuild struct {
	Incarnation
	// Wave is the wave a releasing build ramps in.
	Wave int
	// Percents are the traffic it takes in each wave, and Nexts the
	// percent its ramp may step to there (as Incarnation.Percent and Next).
	Percents, Nexts []int32
}

// in is the build as Allocate sees it in wave w. A canary runs in the
// first wave only: in the others it is a canary of what it has there
// (none, but for an app's first build, which serves everything), so it
// neither gains nor gives its traffic to a build ahead of its wave. A releasing
// build is at its release.max in the waves before its own; in the waves
// after, it keeps what it has there (none until it gets there) and never
// gains, but stays the newest releasing build: older ones do not ramp there
// either.
func (b WaveBuild) in(w int) Incarnation {
	inc := b.Incarnation
	inc.Percent, inc.Next = at(b.Percents, w), at(b.Nexts, w)
	switch {
	case inc.State == Canarying && w > 0:
		inc.Canary = inc.Percent
	case inc.State == Releasing && w > b.Wave:
		inc.Next = inc.Percent
	case inc.State == Releasing && w < b.Wave:
		inc.Next = percentCap(inc.Max)
	}
	return inc
}

func at(ps []int32, i int) int32 {
	if i < len(ps) {
		return ps[i]
	}
	return 0
}

// WaveAllocation is the traffic of every build in every wave.
type WaveAllocation struct {
	// Percent is each build's traffic in each wave: Percent[build][wave],
	// and Earned the part of it the build's own state granted it there
	// (Allocation.Earned). A canary earns its percent in the first wave
	// alone: what an app's first build serves in the waves after it, while
	// it canaries, is not earned.
	Percent, Earned [][]int32
	// Ramping is, per wave, the index of the build whose traffic may grow
	// there, or -1.
	Ramping []int
	// LostEligibility marks the builds left with no traffic in any wave
	// after a newer one ramped (Allocation.LostEligibility in every wave).
	LostEligibility []bool
}

// AllocateWaves shares the traffic of each of waves waves among builds
// given newest first, as Allocate does for each, with each build as it is
// in that wave (WaveBuild.in). With one wave it is Allocate.
func AllocateWaves(builds []WaveBuild, waves int) WaveAllocation {
	waves = max(waves, 1)
	a := WaveAllocation{
		Percent:         make([][]int32, len(builds)),
		Earned:          make([][]int32, len(builds)),
		Ramping:         make([]int, waves),
		LostEligibility: make([]bool, len(builds)),
	}
	for i := range builds {
		a.Percent[i] = make([]int32, waves)
		a.Earned[i] = make([]int32, waves)
		a.LostEligibility[i] = true
	}
	incs := make([]Incarnation, len(builds))
	for w := range waves {
		for i, b := range builds {
			incs[i] = b.in(w)
		}
		one := Allocate(incs)
		a.Ramping[w] = one.Ramping
		for i, b := range builds {
			a.Percent[i][w] = one.Percent[i]
			if b.State != Canarying || w == 0 {
				a.Earned[i][w] = one.Earned[i]
			}
			a.LostEligibility[i] = a.LostEligibility[i] && one.LostEligibility[i]
		}
	}
	return a
}

// Highest is the most traffic a build takes in any wave.
func Highest(percents []int32) int32 {
	var out int32
	for _, p := range percents {
		out = max(out, p)
	}
	return out
}
