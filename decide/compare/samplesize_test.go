package compare

import (
	"math"
	"testing"
)

// TestDefaultMinRequests: at 99 % the default minimum is the continuity-
// corrected two-proportion sample size for 1 % against 2 % at 80 % power,
// with α = 0.9 × 1 %, worked here by hand: z₀.₉₉₁ = 2.365618, z₀.₈ =
// 0.841621, n₀ = (2.365618·√(2·0.015·0.985) + 0.841621·√(0.0099 + 0.0196))²
// / 0.01² = 3 038.9, n = n₀/4·(1 + √(1 + 4/(n₀·0.01)))² = 3 235.1, so 3 236.
// A stricter confidence needs more requests, a looser one fewer, and
// settings out of range take the default confidence.
func TestDefaultMinRequests(t *testing.T) {
	n0 := math.Pow(2.365618*math.Sqrt(2*0.015*0.985)+0.841621*math.Sqrt(0.0099+0.0196), 2) / 1e-4
	byHand := math.Ceil(n0 / 4 * math.Pow(1+math.Sqrt(1+4/(n0*0.01)), 2))
	if got := DefaultMinRequests(0.99); got != 3236 || got != byHand {
		t.Errorf("DefaultMinRequests(0.99) = %g, want 3236 (by hand %g)", got, byHand)
	}
	if a, b, c := DefaultMinRequests(0.95), DefaultMinRequests(0.99), DefaultMinRequests(0.999); !(a < b && b < c) {
		t.Errorf("minimum at 95 %%, 99 %%, 99.9 %%: %g, %g, %g; want increasing", a, b, c)
	}
	for _, c := range []float64{0, -1, 0.5, 1, 2, math.NaN()} {
		if got := DefaultMinRequests(c); got != 3236 {
			t.Errorf("DefaultMinRequests(%g) = %g, want the default's 3236", c, got)
		}
	}
	for _, args := range [][4]float64{{0.02, 0.01, 0.99, 0.8}, {0, 0.01, 0.99, 0.8}, {0.01, 1, 0.99, 0.8}, {0.01, 0.02, 0.99, 1}} {
		if got := RequestsToDetect(args[0], args[1], args[2], args[3]); got != 0 {
			t.Errorf("RequestsToDetect%v = %g, want 0", args, got)
		}
	}
}

// TestCompare_ExactSizeAndPower: in one cluster the verdict's false-failure
// rate and power are sums over every pair of error counts, weighted by
// their binomial probabilities (pairs more than 10 σ from their mean, whose
// mass is below 10⁻²², left out), with no simulation noise: at the default
// minimum and ten times it, with equal ratios of 0.1 %, 1 % and 5 %, it
// fails at most 1 − confidence of the time; with 2 % against 1 % at
// exactly the minimum it fails at least 80 % of the time, even at the
// pooled comparison's share of 1 − confidence when outlier tests run
// (PooledShare), while a hundred requests fewer would not.
func TestCompare_ExactSizeAndPower(t *testing.T) {
	alpha := 1 - DefaultConfidence
	minimum := DefaultMinRequests(DefaultConfidence)
	// failing returns the probability that fails holds of the counts of n
	// requests a side with the given ratios.
	failing := func(n, canaryRatio, baselineRatio float64, fails func(canary, baseline Counts) bool) float64 {
		window := func(p float64) (float64, float64) {
			sd := math.Sqrt(n * p * (1 - p))
			return math.Max(0, math.Floor(n*p-10*sd)), math.Min(n, math.Ceil(n*p+10*sd))
		}
		cLo, cHi := window(canaryRatio)
		bLo, bHi := window(baselineRatio)
		var rate float64
		for xc := cLo; xc <= cHi; xc++ {
			pc := dbinom(xc, n, canaryRatio)
			for xb := bLo; xb <= bHi; xb++ {
				if fails(Counts{n, xc}, Counts{n, xb}) {
					rate += pc * dbinom(xb, n, baselineRatio)
				}
			}
		}
		return rate
	}
	verdict := func(canary, baseline Counts) bool { return Compare(one(canary, baseline)).Outcome == Fail }
	for _, n := range []float64{minimum, 10 * minimum} {
		for _, ratio := range []float64{0.001, 0.01, 0.05} {
			size := failing(n, ratio, ratio, verdict)
			t.Logf("%g requests a side at %g: false failures %.3f %%", n, ratio, 100*size)
			if size > alpha {
				t.Errorf("%g requests a side at %g: false failures %.4f %%, want at most %g %%", n, ratio, 100*size, 100*alpha)
			}
		}
	}
	// With outlier tests, the pooled comparison is held to its share of
	// 1 − confidence: its p-value is Compare's pooled p-value.
	pooled := func(canary, baseline Counts) bool {
		return canary.Ratio() > baseline.Ratio() && worse(canary, baseline)/PooledShare < alpha
	}
	for _, tc := range []struct {
		name  string
		fails func(canary, baseline Counts) bool
	}{{"one cluster", verdict}, {"the pooled comparison beside outlier tests", pooled}} {
		power := failing(minimum, 0.02, 0.01, tc.fails)
		t.Logf("2 %% against 1 %%, %s: power %.2f %% with %g requests a side", tc.name, 100*power, minimum)
		if power < 0.8 {
			t.Errorf("%s: power %.2f %% with %g requests a side, want at least 80 %%", tc.name, 100*power, minimum)
		}
	}
	// Below the minimum the verdict holds, so the pooled comparison alone
	// shows the minimum is no larger than it needs to be.
	fewer := failing(minimum-100, 0.02, 0.01, pooled)
	t.Logf("2 %% against 1 %%, the pooled comparison beside outlier tests: power %.2f %% with 100 requests fewer", 100*fewer)
	if fewer >= 0.8 {
		t.Errorf("power %.2f %% with 100 requests fewer than the minimum: the minimum is larger than it needs to be", 100*fewer)
	}
}
