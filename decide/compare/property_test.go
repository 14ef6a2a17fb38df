package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// trials is how many verdicts each property scenario simulates.
const trials = 10_000

// world is a simulated wave: per cluster, the requests each build gets and
// their true error ratios.
type world struct {
	canaryRequests, baselineRequests []int
	canaryRatio, baselineRatio       []float64
}

// split shares n requests among k clusters, the first taking what the
// others' equal shares leave.
func split(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
	}
	out[0] += n - k*(n/k)
	return out
}

func repeat(v float64, k int) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = v
	}
	return out
}

// draw returns one window of counts from the world: every request of a
// build in a cluster fails independently with the build's true ratio
// there.
func (w world) draw(r *rand.Rand) Input {
	in := Input{Canary: map[string]Counts{}, Baseline: map[string]Counts{}}
	for i := range w.canaryRequests {
		name := "c" + strconv.Itoa(i)
		cn, bn := w.canaryRequests[i], w.baselineRequests[i]
		in.Canary[name] = Counts{Requests: float64(cn), Errors: float64(binomial(r, cn, w.canaryRatio[i]))}
		in.Baseline[name] = Counts{Requests: float64(bn), Errors: float64(binomial(r, bn, w.baselineRatio[i]))}
	}
	return in
}

// outcomes runs the world's trials and counts the verdicts, and the trials
// that named an outlier.
func (w world) outcomes(seed uint64) (counts map[Outcome]int, withOutliers int) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	counts = map[Outcome]int{}
	for range trials {
		res := Compare(w.draw(r))
		counts[res.Outcome]++
		if len(res.Outliers) > 0 {
			withOutliers++
		}
	}
	return counts, withOutliers
}

// TestCompare_FalseFailuresAtMostOneMinusConfidence: with equal true error
// ratios, the verdict fails at most 1 − confidence of the time, at low and
// high error ratios, at the default minimum and at ten times it, with one
// cluster and with three (so the outlier tests run), with the baseline
// taking nine times the canary's traffic, and with a cluster whose ratio
// is five times the others' for both builds (a regional fault, not the
// canary's).
//
// Simulation noise: each scenario's 10 000 seeded trials may exceed
// α·N by at most 3.09·√(N·α(1−α)) (the one-sided 99.9 % normal bound:
// a verdict whose true false-failure rate is exactly α exceeds it once in
// a thousand runs); the counts are logged, and the seed fixes them.
func TestCompare_FalseFailuresAtMostOneMinusConfidence(t *testing.T) {
	const confidence = 0.99
	alpha := 1 - confidence
	limit := alpha*trials + 3.09*math.Sqrt(trials*alpha*(1-alpha))
	minimum := int(DefaultMinRequests(confidence))
	type scenario struct {
		name string
		w    world
	}
	var scenarios []scenario
	for _, ratio := range []float64{0.001, 0.01, 0.05} {
		for _, volume := range []int{minimum, 10 * minimum} {
			for _, k := range []int{1, 3} {
				scenarios = append(scenarios, scenario{
					name: fmt.Sprintf("ratio %g, %d requests a side, %d clusters", ratio, volume, k),
					w: world{
						canaryRequests: split(volume, k), baselineRequests: split(volume, k),
						canaryRatio: repeat(ratio, k), baselineRatio: repeat(ratio, k),
					},
				})
			}
		}
	}
	scenarios = append(scenarios,
		scenario{
			name: "ratio 0.01, baseline nine times the canary's traffic, 3 clusters",
			w: world{
				canaryRequests: split(minimum, 3), baselineRequests: split(9*minimum, 3),
				canaryRatio: repeat(0.01, 3), baselineRatio: repeat(0.01, 3),
			},
		},
		scenario{
			name: "one cluster at 5 % for both builds, the others at 1 %",
			w: world{
				canaryRequests: split(3*minimum, 3), baselineRequests: split(3*minimum, 3),
				canaryRatio: []float64{0.05, 0.01, 0.01}, baselineRatio: []float64{0.05, 0.01, 0.01},
			},
		})
	for i, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			counts, withOutliers := s.w.outcomes(uint64(i + 1))
			if counts[TooFew] > 0 {
				t.Fatalf("%d of %d trials held with at least the minimum requests", counts[TooFew], trials)
			}
			t.Logf("%s: false failures %d of %d (%.2f %%), %d naming an outlier; limit %.0f", s.name, counts[Fail], trials, 100*float64(counts[Fail])/trials, withOutliers, limit)
			if float64(counts[Fail]) > limit {
				t.Errorf("%d false failures of %d trials, more than 1 − confidence allows (%.0f)", counts[Fail], trials, limit)
			}
		})
	}
}

// TestCompare_CatchesADoublingAtTheDefaultMinimum: a canary at 2 % against
// a baseline at 1 %, with exactly the default minimum requests a side,
// fails at least 80 % of the time, in one cluster and in three (where the
// pooled comparison gives a share of 1 − confidence to the outlier tests).
func TestCompare_CatchesADoublingAtTheDefaultMinimum(t *testing.T) {
	minimum := int(DefaultMinRequests(DefaultConfidence))
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d clusters", k), func(t *testing.T) {
			t.Parallel()
			w := world{
				canaryRequests: split(minimum, k), baselineRequests: split(minimum, k),
				canaryRatio: repeat(0.02, k), baselineRatio: repeat(0.01, k),
			}
			counts, _ := w.outcomes(uint64(100 + k))
			power := float64(counts[Fail]) / trials
			t.Logf("%d clusters, %d requests a side: failed %d of %d (%.1f %%)", k, minimum, counts[Fail], trials, 100*power)
			if counts[TooFew] > 0 {
				t.Fatalf("%d of %d trials held with exactly the minimum requests", counts[TooFew], trials)
			}
			if power < 0.80 {
				t.Errorf("a doubling failed %.1f %% of the time, want at least 80 %%", 100*power)
			}
		})
	}
}
