package compare

import "math"

// The effect DefaultMinRequests is sized for: a canary whose error ratio is
// twice its baseline's 1 %, caught with this power.
const (
	sizedBaseRatio   = 0.01
	sizedCanaryRatio = 0.02
	sizedPower       = 0.80
)

// DefaultMinRequests returns the requests each side (the canary and the
// baseline, pooled over the clusters compared) needs before Compare gives a
// verdict, when Config.MinRequests is 0: the requests per side that catch a
// doubling of a 1 % error ratio (1 % against 2 %) 80 % of the time with the
// pooled comparison at the given confidence (0.99 when not in (½, 1)), as
// RequestsToDetect computes them. At 0.99 that is 3 236.
func DefaultMinRequests(confidence float64) float64 {
	return RequestsToDetect(sizedBaseRatio, sizedCanaryRatio, confidence, sizedPower)
}

// RequestsToDetect returns the requests per side with which the pooled
// comparison at the given confidence fails a canary whose true error ratio
// is worse when its baseline's is base, with the given power (or 0 when
// worse ≤ base, or an argument is out of its range). It is the usual
// sample size for a one-sided comparison of two proportions (Fleiss, Levin
// and Paik, Statistical Methods for Rates and Proportions, 3rd ed., §4.2),
//
//	n₀ = (z₁₋ₐ·√(2·p̄·(1−p̄)) + z_power·√(p₁(1−p₁) + p₂(1−p₂)))² / (p₂ − p₁)²,  p̄ = (p₁+p₂)/2,
//
// with Fleiss, Tytun and Ury's continuity correction, because the test is
// exact and discrete and so needs more than the normal test n₀ is for,
//
//	n = n₀/4 · (1 + √(1 + 4/(n₀·(p₂ − p₁))))²,
//
// rounded up; α is the share of 1 − confidence the pooled comparison gets
// when the outlier tests run (PooledShare), the smaller of its two
// thresholds, so the power holds whatever the number of clusters.
func RequestsToDetect(base, worse, confidence, power float64) float64 {
	confidence = confidenceOrDefault(confidence)
	if !(base > 0 && worse > base && worse < 1 && power > 0 && power < 1) {
		return 0
	}
	alpha := PooledShare * (1 - confidence)
	za, zb := normalQuantile(1-alpha), normalQuantile(power)
	mean := (base + worse) / 2
	d := worse - base
	root := za*math.Sqrt(2*mean*(1-mean)) + zb*math.Sqrt(base*(1-base)+worse*(1-worse))
	n0 := root * root / (d * d)
	c := 1 + math.Sqrt(1+4/(n0*d))
	return math.Ceil(n0 / 4 * c * c)
}

// confidenceOrDefault returns the confidence, or DefaultConfidence when it
// is not strictly between ½ and 1 (0 meaning unset; at ½ or below a
// canary would fail on a coin toss).
func confidenceOrDefault(c float64) float64 {
	if c > 0.5 && c < 1 {
		return c
	}
	return DefaultConfidence
}
