package release

import (
	"fmt"
	"slices"
	"testing"
	"testing/quick"
	"time"
)

func TestNextWave(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	bakes := []time.Duration{time.Minute, 2 * time.Minute}
	for _, tc := range []struct {
		name string
		in   WaveInput
		want WaveStep
	}{
		{"no waves: one wave, nothing to move on to",
			WaveInput{Now: t0, Waves: 0, Percent: 100}, WaveStep{}},
		{"ramping in the first wave stays there",
			WaveInput{Now: t0, Waves: 3, Percent: 40, Bakes: bakes}, WaveStep{}},
		{"released in the first wave moves on and bakes",
			WaveInput{Now: t0, Waves: 3, Percent: 100, Bakes: bakes},
			WaveStep{Wave: 1, Started: t0, Baking: t0.Add(time.Minute)}},
		{"released at its max moves on",
			WaveInput{Now: t0, Waves: 3, Percent: 50, Max: 50, Bakes: bakes},
			WaveStep{Wave: 1, Started: t0, Baking: t0.Add(time.Minute)}},
		{"still baking",
			WaveInput{Now: t0.Add(59 * time.Second), Wave: 1, Waves: 3, Started: t0, Bakes: bakes},
			WaveStep{Wave: 1, Started: t0, Baking: t0.Add(time.Minute)}},
		{"baked: the wave ramps",
			WaveInput{Now: t0.Add(time.Minute), Wave: 1, Waves: 3, Started: t0, Bakes: bakes},
			WaveStep{Wave: 1, Started: t0}},
		{"each wave bakes for the bake of the wave before",
			WaveInput{Now: t0, Wave: 1, Waves: 3, Started: t0.Add(-time.Hour), Percent: 100, Bakes: bakes},
			WaveStep{Wave: 2, Started: t0, Baking: t0.Add(2 * time.Minute)}},
		{"no bake: the next wave ramps at once",
			WaveInput{Now: t0, Waves: 2, Percent: 100},
			WaveStep{Wave: 1, Started: t0}},
		{"the last wave is the last",
			WaveInput{Now: t0, Wave: 2, Waves: 3, Started: t0.Add(-time.Hour), Percent: 100, Bakes: bakes},
			WaveStep{Wave: 2, Started: t0.Add(-time.Hour)}},
		{"a recorded wave past the last (waves removed) is the last",
			WaveInput{Now: t0, Wave: 7, Waves: 2, Started: t0.Add(-time.Hour), Percent: 30, Bakes: bakes},
			WaveStep{Wave: 1, Started: t0.Add(-time.Hour)}},
		{"a build released before is released in every wave at once",
			WaveInput{Now: t0, Waves: 3, Bakes: bakes, Rereleased: true}, WaveStep{Wave: 2}},
		{"a lost start time bakes no longer",
			WaveInput{Now: t0, Wave: 1, Waves: 2, Percent: 0, Bakes: bakes},
			WaveStep{Wave: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NextWave(tc.in); got != tc.want {
				t.Errorf("NextWave = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// wb is a build of a release in waves whose ramp has no step due.
func wb(tag string, s State, wave int, percents ...int32) WaveBuild {
	return WaveBuild{Incarnation: Incarnation{Tag: tag, State: s}, Wave: wave, Percents: percents, Nexts: slices.Clone(percents)}
}

func (b WaveBuild) canary(p int32) WaveBuild { b.Canary = p; return b }

// next sets the percent the ramp may step to in every wave.
func (b WaveBuild) next(ps ...int32) WaveBuild { b.Nexts = ps; return b }

func TestAllocateWaves(t *testing.T) {
	for _, tc := range []struct {
		name    string
		builds  []WaveBuild
		want    [][]int32
		ramping []int
		lost    []bool
	}{
		{"a canary runs in the first wave only",
			[]WaveBuild{wb("v2", Canarying, 0, 0, 0).canary(10), wb("v1", Released, 0, 100, 100)},
			[][]int32{{10, 0}, {90, 100}}, []int{1, 1}, []bool{false, false}},
		{"an app's first canary serves everything everywhere",
			[]WaveBuild{wb("v1", Canarying, 0, 0, 0).canary(10)},
			[][]int32{{100, 100}}, []int{-1, -1}, []bool{false}},
		{"a ramp in the first wave leaves the second alone",
			[]WaveBuild{wb("v2", Releasing, 0, 10, 0).next(20, 10), wb("v1", Released, 0, 90, 100)},
			[][]int32{{20, 0}, {80, 100}}, []int{0, 0}, []bool{false, false}},
		{"released in the first wave, the previous build serves the second",
			[]WaveBuild{wb("v2", Releasing, 1, 100, 0), wb("v1", Released, 0, 0, 100)},
			[][]int32{{100, 0}, {0, 100}}, []int{0, 0}, []bool{false, false}},
		{"the second wave ramps; the first stays released whatever its ramp says",
			[]WaveBuild{wb("v2", Releasing, 1, 100, 10).next(100, 20), wb("v1", Released, 0, 0, 90)},
			[][]int32{{100, 20}, {0, 80}}, []int{0, 0}, []bool{false, false}},
		{"released in the last wave, the previous build lost everywhere",
			[]WaveBuild{wb("v2", Releasing, 1, 100, 80).next(100, 100), wb("v1", Released, 0, 0, 20)},
			[][]int32{{100, 100}, {0, 0}}, []int{0, 0}, []bool{false, true}},
		{"a failed build gives back in every wave",
			[]WaveBuild{wb("v3", Failing, 1, 100, 40), wb("v2", Released, 0, 0, 60).next(10, 100)},
			[][]int32{{90, 0}, {10, 100}}, []int{1, 1}, []bool{false, false}},
		{"a canary beside a build baking before the second wave",
			[]WaveBuild{wb("v3", Canarying, 0, 0, 0).canary(10), wb("v2", Releasing, 1, 100, 0), wb("v1", Released, 0, 0, 100)},
			[][]int32{{10, 0}, {90, 0}, {0, 100}}, []int{1, 1}, []bool{false, false, false}},
		{"an older canary's traffic in a later wave goes to no build ahead of that wave, nor beyond a ramp's step",
			[]WaveBuild{wb("v2", Releasing, 0, 10, 60).next(20, 60), wb("v1", Canarying, 0, 90, 40).canary(10)},
			[][]int32{{20, 60}, {80, 40}}, []int{0, 0}, []bool{false, false}},
		{"a canary does not stop an older build's ramp in a later wave",
			[]WaveBuild{wb("v3", Canarying, 0, 0, 0).canary(10), wb("v2", Releasing, 1, 100, 20).next(100, 40), wb("v1", Released, 0, 0, 80)},
			[][]int32{{10, 0}, {90, 40}, {0, 60}}, []int{1, 1}, []bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AllocateWaves(tc.builds, len(tc.want[0]))
			if !slices.EqualFunc(a.Percent, tc.want, slices.Equal) {
				t.Errorf("percent = %v, want %v", a.Percent, tc.want)
			}
			if !slices.Equal(a.Ramping, tc.ramping) {
				t.Errorf("ramping = %v, want %v", a.Ramping, tc.ramping)
			}
			if !slices.Equal(a.LostEligibility, tc.lost) {
				t.Errorf("lost = %v, want %v", a.LostEligibility, tc.lost)
			}
		})
	}
}

// TestAllocateWaves_OneWaveIsAllocate: a target without waves is one wave,
// and its traffic is decided as it always was.
func TestAllocateWaves_OneWaveIsAllocate(t *testing.T) {
	prop := func(data []byte) bool {
		incs := decodeIncarnations(data)
		builds := make([]WaveBuild, len(incs))
		for i, inc := range incs {
			builds[i] = WaveBuild{Incarnation: inc, Percents: []int32{inc.Percent}, Nexts: []int32{inc.Next}}
		}
		want, got := Allocate(incs), AllocateWaves(builds, 1)
		for i := range incs {
			if got.Percent[i][0] != want.Percent[i] || got.LostEligibility[i] != want.LostEligibility[i] {
				t.Logf("build %d: %d%% lost %v, want %d%% lost %v", i, got.Percent[i][0], got.LostEligibility[i], want.Percent[i], want.LostEligibility[i])
				return false
			}
		}
		return got.Ramping[0] == want.Ramping
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

const fuzzWaves = 3

// decodeWaveBuilds makes up to 8 builds in fuzzWaves waves from data, 3+2×fuzzWaves bytes each.
func decodeWaveBuilds(data []byte) []WaveBuild {
	const size = 3 + 2*fuzzWaves
	var out []WaveBuild
	for i := 0; i+size <= len(data) && len(out) < 8; i += size {
		pct := func(b byte) int32 { return int32(b) - 28 }
		b := WaveBuild{
			Incarnation: Incarnation{Tag: fmt.Sprintf("v%d", i/size), State: fuzzStates[int(data[i])%len(fuzzStates)],
				Canary: pct(data[i+1])},
			Wave: int(data[i+2]) % (fuzzWaves + 1),
		}
		for w := range fuzzWaves {
			b.Percents = append(b.Percents, pct(data[i+3+2*w]))
			b.Nexts = append(b.Nexts, pct(data[i+4+2*w]))
		}
		out = append(out, b)
	}
	return out
}

func encodeWaveBuilds(builds ...WaveBuild) []byte {
	var data []byte
	b := func(p int32) byte { return byte(p + 28) }
	for _, wb := range builds {
		data = append(data, byte(slices.Index(fuzzStates, wb.State)), b(wb.Canary), byte(wb.Wave))
		for w := range fuzzWaves {
			data = append(data, b(at(wb.Percents, w)), b(at(wb.Nexts, w)))
		}
	}
	return data
}

// checkWaves checks the promises of a release in waves on one allocation:
// in each wave whose recorded traffic is whole (each build's within
// [0, 100], summing to 100, on builds that may serve, as Picchu records it), the traffic still sums
// to 100, a failing build gains none while another may take it
// (failingNeverGains), and a canarying or releasing build
// gains none in a wave after its own (the canary's is the first).
func checkWaves(builds []WaveBuild, a WaveAllocation) error {
	for w := range fuzzWaves {
		var sum, got int32
		whole := true
		for i, b := range builds {
			p := at(b.Percents, w)
			whole = whole && p >= 0 && p <= 100
			sum += p
			got += a.Percent[i][w]
			if a.Percent[i][w] < 0 || a.Percent[i][w] > 100 {
				return fmt.Errorf("wave %d: %s takes %d%%", w, b.Tag, a.Percent[i][w])
			}
		}
		incs := make([]Incarnation, len(builds))
		for i, b := range builds {
			incs[i] = b.in(w)
		}
		// A build between its canary and its release serves the traffic
		// it has (Allocate's waiting builds).
		serving := releasable(incs)
		for i, inc := range incs {
			if waiting(inc) && !slices.Contains(serving, i) {
				serving = append(serving, i)
			}
		}
		for i, inc := range incs {
			// Only a build that may serve has traffic on record.
			whole = whole && (inc.Percent == 0 || slices.Contains(serving, i))
		}
		if !whole || sum != 100 || len(serving) == 0 {
			continue
		}
		if got != 100 {
			return fmt.Errorf("wave %d: traffic sums to %d", w, got)
		}
		column := Allocation{Percent: make([]int32, len(builds))}
		for i := range builds {
			column.Percent[i] = a.Percent[i][w]
		}
		if err := failingNeverGains(incs, column); err != nil {
			return fmt.Errorf("wave %d: %w", w, err)
		}
		for i, b := range builds {
			own := 0
			if b.State == Releasing {
				own = b.Wave
			}
			ahead := (b.State == Canarying || b.State == Releasing) && w > own
			// The oldest build that may serve takes what is left (an
			// app's first build serves everything).
			first := i == receiver(incs, releasable(incs))
			if ahead && !first && a.Percent[i][w] > at(b.Percents, w) {
				return fmt.Errorf("wave %d: %s %s (wave %d) gains: %d%% → %d%%", w, b.State, b.Tag, b.Wave, at(b.Percents, w), a.Percent[i][w])
			}
		}
	}
	return nil
}

func TestAllocateWaves_Invariants(t *testing.T) {
	prop := func(data []byte) bool {
		builds := decodeWaveBuilds(data)
		if err := checkWaves(builds, AllocateWaves(builds, fuzzWaves)); err != nil {
			t.Logf("%v\nbuilds: %+v", err, builds)
			return false
		}
		return true
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 20000}); err != nil {
		t.Error(err)
	}
}

// FuzzAllocateWaves feeds AllocateWaves any builds: it never panics and
// keeps the promises of checkWaves.
func FuzzAllocateWaves(f *testing.F) {
	f.Add([]byte{})
	f.Add(encodeWaveBuilds(wb("v2", Canarying, 0, 0, 0, 0).canary(10), wb("v1", Released, 0, 100, 100, 100)))
	f.Add(encodeWaveBuilds(wb("v2", Releasing, 1, 100, 10, 0).next(100, 20, 5), wb("v1", Released, 0, 0, 90, 100)))
	f.Add(encodeWaveBuilds(wb("v3", Failing, 1, 100, 40, 0), wb("v2", Released, 0, 0, 60, 100).next(10, 100, 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		builds := decodeWaveBuilds(data)
		if err := checkWaves(builds, AllocateWaves(builds, fuzzWaves)); err != nil {
			t.Fatalf("%v\nbuilds: %+v", err, builds)
		}
	})
}
