package compare

import "math"

// exactMaxSD is the standard deviation above which upperTail uses the
// normal approximation instead of summing terms: the sum takes about ten
// standard deviations of terms (at most ~10⁵ here), and at this size the
// binomial's skewness, (1−2π)/σ, is below 10⁻⁴, so the continuity-corrected
// normal tail is off by far less than any confidence a person sets.
const exactMaxSD = 1e4

// exactMaxK is the largest number of trials the term-by-term sum takes:
// above 2⁵² a float64 no longer steps by one.
const exactMaxK = 1 << 52

// maxTerms bounds the terms upperTail sums, whatever the arguments: with
// σ ≤ exactMaxSD the sum stops long before (see exactMaxSD).
const maxTerms = 1_000_000

// upperTail returns P(X ≥ x) for X ~ Binomial(k, pi), with x and k whole
// numbers (float64 so that sums of counts stay exact up to 2⁵³).
//
// For σ = √(kπ(1−π)) ≤ exactMaxSD it is exact up to rounding: when x lies
// above the mean kπ it sums the terms P(X = j) for j = x, x+1, … until they
// no longer change the sum (each term from the one before by the ratio
// P(X=j+1)/P(X=j) = (k−j)/(j+1) · π/(1−π), the first by dbinom); when x lies
// at or below the mean it returns 1 − P(X ≤ x−1), summing downward the same
// way (that tail is the small one, so nothing is lost by the subtraction).
// Above exactMaxSD it returns the normal tail with continuity correction,
// Q((x − ½ − kπ)/σ), Q(z) = ½·erfc(z/√2).
func upperTail(x, k, pi float64) float64 {
	switch {
	case x <= 0:
		return 1
	case x > k || pi <= 0:
		return 0
	case pi >= 1:
		return 1
	}
	mean := k * pi
	sd := math.Sqrt(k * pi * (1 - pi))
	if sd > exactMaxSD || k > exactMaxK {
		return clamp01(0.5 * math.Erfc((x-0.5-mean)/sd/math.Sqrt2))
	}
	odds := pi / (1 - pi)
	if x > mean {
		t := dbinom(x, k, pi)
		sum := t
		for j, n := x, 0; j < k && n < maxTerms; j, n = j+1, n+1 {
			ratio := (k - j) / (j + 1) * odds
			t *= ratio
			sum += t
			if ratio < 1 && t <= sum*1e-17 {
				break
			}
		}
		return clamp01(sum)
	}
	t := dbinom(x-1, k, pi)
	sum := t
	for j, n := x-1, 0; j > 0 && n < maxTerms; j, n = j-1, n+1 {
		// P(X=j−1) = P(X=j) · j/(k−j+1) · (1−π)/π.
		ratio := j / (k - j + 1) / odds
		t *= ratio
		sum += t
		if ratio < 1 && t <= sum*1e-17 {
			break
		}
	}
	return clamp01(1 - sum)
}

// dbinom returns P(X = x) for X ~ Binomial(n, p), 0 ≤ x ≤ n whole, by
// Loader's saddle-point form ("Fast and accurate computation of binomial
// probabilities", 2000), which keeps its relative accuracy for any n where
// a difference of log-gammas would lose it:
//
//	P(X = x) = exp(δ(n) − δ(x) − δ(n−x) − D(x, np) − D(n−x, nq)) · √(n / (2π·x·(n−x)))
//
// with q = 1 − p, δ the error of Stirling's formula (stirlerr) and
// D(x, m) = x·log(x/m) + m − x the deviance (bd0).
func dbinom(x, n, p float64) float64 {
	q := 1 - p
	switch {
	case x < 0 || x > n:
		return 0
	case x == 0:
		return math.Exp(n * math.Log1p(-p))
	case x == n:
		return math.Exp(n * math.Log(p))
	}
	lc := stirlerr(n) - stirlerr(x) - stirlerr(n-x) - bd0(x, n*p) - bd0(n-x, n*q)
	lf := math.Log(2*math.Pi) + math.Log(x) + math.Log1p(-x/n)
	return math.Exp(lc - 0.5*lf)
}

// stirlerr returns δ(n) = log(n!) − log(√(2πn)·(n/e)ⁿ), the error of
// Stirling's formula: directly from math.Lgamma for n ≤ 15, where that
// loses nothing, and from its asymptotic series
// δ(n) = 1/(12n) − 1/(360n³) + 1/(1260n⁵) − 1/(1680n⁷) + 1/(1188n⁹) above,
// truncated where the next term is below 10⁻¹⁷.
func stirlerr(n float64) float64 {
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	if n <= 15 {
		lg, _ := math.Lgamma(n + 1)
		return lg - (n+0.5)*math.Log(n) + n - 0.5*math.Log(2*math.Pi)
	}
	nn := n * n
	switch {
	case n > 500:
		return (s0 - s1/nn) / n
	case n > 80:
		return (s0 - (s1-s2/nn)/nn) / n
	case n > 35:
		return (s0 - (s1-(s2-s3/nn)/nn)/nn) / n
	default:
		return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
	}
}

// bd0 returns the deviance D(x, m) = x·log(x/m) + m − x without the
// cancellation that formula suffers when x is close to m: there, with
// v = (x−m)/(x+m), D = (x−m)·v + 2x·(v³/3 + v⁵/5 + v⁷/7 + …).
func bd0(x, m float64) float64 {
	if math.Abs(x-m) < 0.1*(x+m) {
		v := (x - m) / (x + m)
		s := (x - m) * v
		ej := 2 * x * v
		v *= v
		for j := 1; j < 1000; j++ {
			ej *= v
			s1 := s + ej/float64(2*j+1)
			if s1 == s {
				return s1
			}
			s = s1
		}
		return s
	}
	return x*math.Log(x/m) + m - x
}

// normalQuantile returns z with Φ(z) = q, Φ the standard normal
// distribution function: z = √2 · erf⁻¹(2q − 1).
func normalQuantile(q float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*q-1)
}

func clamp01(p float64) float64 {
	switch {
	case math.IsNaN(p):
		return 1
	case p < 0:
		return 0
	case p > 1:
		return 1
	}
	return p
}
