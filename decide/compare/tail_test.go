package compare

import (
	"math"
	"math/big"
	"testing"
)

// exactTails returns P(X ≥ x) for X ~ Binomial(k, pi) and every x in
// [0, k+1], summing the terms C(k, j)·πʲ·(1−π)ᵏ⁻ʲ from the top in 200-bit
// arithmetic: the reference upperTail is checked against.
func exactTails(k int64, pi float64) []float64 {
	const prec = 200
	p := new(big.Float).SetPrec(prec).SetFloat64(pi)
	q := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), p)
	// pp[i] = πⁱ and qp[i] = (1−π)ⁱ, i ≤ k.
	pp, qp := make([]*big.Float, k+1), make([]*big.Float, k+1)
	pp[0], qp[0] = big.NewFloat(1).SetPrec(prec), big.NewFloat(1).SetPrec(prec)
	for i := int64(1); i <= k; i++ {
		pp[i] = new(big.Float).SetPrec(prec).Mul(pp[i-1], p)
		qp[i] = new(big.Float).SetPrec(prec).Mul(qp[i-1], q)
	}
	tails := make([]float64, k+2)
	sum := new(big.Float).SetPrec(prec)
	for j := k; j >= 0; j-- {
		c := new(big.Float).SetPrec(prec).SetInt(new(big.Int).Binomial(k, j))
		c.Mul(c, pp[j])
		c.Mul(c, qp[k-j])
		sum.Add(sum, c)
		tails[j], _ = sum.Float64()
	}
	return tails
}

// Test_upperTail_Exact: upperTail matches the binomial tail computed in
// 200-bit arithmetic to 10⁻⁹ relative, for every x on both sides of the
// mean, in the far tails and at the ends.
func Test_upperTail_Exact(t *testing.T) {
	for _, k := range []int64{1, 2, 7, 40, 97, 300} {
		for _, pi := range []float64{0.001, 0.02834, 0.3, 0.5, 0.9, 0.999} {
			tails := exactTails(k, pi)
			for x := range k + 2 {
				got, want := upperTail(float64(x), float64(k), pi), tails[x]
				if math.Abs(got-want) > 1e-9*want && math.Abs(got-want) > 1e-300 {
					t.Errorf("P(X ≥ %d), X ~ Binomial(%d, %g) = %g, want %g", x, k, pi, got, want)
				}
			}
		}
	}
}

// Test_upperTail_Normal: where upperTail switches to the normal
// approximation (σ above 10⁴), it agrees with the exact sum just below the
// switch to 10⁻⁴, across the range of p-values that matter.
func Test_upperTail_Normal(t *testing.T) {
	const pi = 0.5
	k := math.Round(4 * exactMaxSD * exactMaxSD / 1.0001) // σ just below the switch
	sd := math.Sqrt(k * pi * (1 - pi))
	for _, z := range []float64{-3, -1, 0, 1, 2, 2.33, 3, 4} {
		x := math.Round(k*pi + z*sd)
		exact := upperTail(x, k, pi)
		normal := clamp01(0.5 * math.Erfc((x-0.5-k*pi)/sd/math.Sqrt2))
		if math.Abs(exact-normal) > 1e-4 {
			t.Errorf("z %g: exact %g, normal %g", z, exact, normal)
		}
	}
}

// Test_upperTail_Extremes: huge, tiny and degenerate arguments give a
// probability, never NaN.
func Test_upperTail_Extremes(t *testing.T) {
	for _, tc := range [][3]float64{
		{1, 2e15, 1e-15}, {1e15, 2e15, 0.5}, {1e15 + 1e8, 2e15, 0.5}, {5, 1e12, 1e-9}, {3e5, 1e12, 1e-9},
		{0, 0, 0.5}, {1, 0, 0.5}, {3, 10, 0}, {3, 10, 1}, {0, 10, 0}, {10, 10, 1e-300}, {1, 1e15, 1 - 1e-16},
	} {
		p := upperTail(tc[0], tc[1], tc[2])
		if math.IsNaN(p) || p < 0 || p > 1 {
			t.Errorf("upperTail(%g, %g, %g) = %g, want a probability", tc[0], tc[1], tc[2], p)
		}
	}
	// σ = √(2·10¹⁵·¼) ≈ 2.2·10⁷: 10⁸ above the mean is z ≈ 4.47.
	if p, want := upperTail(1e15+1e8, 2e15, 0.5), 0.5*math.Erfc(4.472135955/math.Sqrt2); math.Abs(p-want) > 1e-3*want {
		t.Errorf("10⁸ above the mean of 10¹⁵: p %g, want %g", p, want)
	}
}

// Test_dbinom: Loader's form matches the same probability from log-gammas
// where those are exact enough (n ≤ 2000), to 10⁻¹⁰ relative.
func Test_dbinom(t *testing.T) {
	for _, n := range []float64{1, 5, 16, 36, 81, 501, 2000} {
		for _, p := range []float64{0.001, 0.1, 0.5, 0.97} {
			for x := 0.0; x <= n; x += math.Max(1, math.Floor(n/13)) {
				a, _ := math.Lgamma(n + 1)
				b, _ := math.Lgamma(x + 1)
				c, _ := math.Lgamma(n - x + 1)
				want := math.Exp(a - b - c + x*math.Log(p) + (n-x)*math.Log1p(-p))
				if got := dbinom(x, n, p); math.Abs(got-want) > 1e-10*want && math.Abs(got-want) > 1e-300 {
					t.Errorf("P(X = %g), X ~ Binomial(%g, %g) = %g, want %g", x, n, p, got, want)
				}
			}
		}
	}
}

// Test_normalQuantile: the quantiles the sample size uses, against
// Python's statistics.NormalDist().inv_cdf.
func Test_normalQuantile(t *testing.T) {
	for q, want := range map[float64]float64{0.5: 0, 0.8: 0.8416212335729144, 0.95: 1.6448536269514715, 0.99: 2.3263478740408408, 0.991: 2.365618126864292} {
		if got := normalQuantile(q); math.Abs(got-want) > 1e-12 {
			t.Errorf("Φ⁻¹(%g) = %.16g, want %.16g", q, got, want)
		}
	}
}
