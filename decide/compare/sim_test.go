package compare

import (
	"math"
	"math/rand/v2"
	"testing"
)

// binomial draws from Binomial(n, p) exactly, by Knuth's recursion (The Art
// of Computer Programming, vol. 2, §3.4.1 F): the a-th smallest of n
// uniforms, a = 1 + n/2, is Beta(a, n+1−a); the a−1 below it are uniforms
// on [0, X] and the n−a above it uniforms on [X, 1], so the count below p
// is Binomial(a−1, p/X) when X ≥ p, and a + Binomial(n−a, (p−X)/(1−X))
// otherwise. Below 32 trials it counts Bernoulli draws.
func binomial(r *rand.Rand, n int, p float64) int {
	k := 0
	for n > 32 {
		a := 1 + n/2
		b := n + 1 - a
		x := beta(r, float64(a), float64(b))
		if x >= p {
			n, p = a-1, p/x
		} else {
			k += a
			n, p = b-1, (p-x)/(1-x)
		}
	}
	for range n {
		if r.Float64() < p {
			k++
		}
	}
	return k
}

// beta draws from Beta(a, b), a, b ≥ 1, as G_a/(G_a + G_b).
func beta(r *rand.Rand, a, b float64) float64 {
	x := gamma(r, a)
	return x / (x + gamma(r, b))
}

// gamma draws from Gamma(a, 1), a ≥ 1, by Marsaglia and Tsang's method ("A
// simple method for generating gamma variables", 2000).
func gamma(r *rand.Rand, a float64) float64 {
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Test_binomial: the simulation's draws have the binomial's mean and
// variance (within 5 standard errors over 20 000 draws) and stay in
// [0, n], for the sizes the property tests draw.
func Test_binomial(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	const draws = 20_000
	for _, tc := range []struct {
		n int
		p float64
	}{{20, 0.3}, {1078, 0.01}, {3236, 0.001}, {3236, 0.02}, {32360, 0.05}, {291240, 0.01}} {
		var sum, sq float64
		for range draws {
			k := binomial(r, tc.n, tc.p)
			if k < 0 || k > tc.n {
				t.Fatalf("Binomial(%d, %g) drew %d", tc.n, tc.p, k)
			}
			sum += float64(k)
			sq += float64(k) * float64(k)
		}
		mean, variance := sum/draws, sq/draws-(sum/draws)*(sum/draws)
		wantMean, wantVar := float64(tc.n)*tc.p, float64(tc.n)*tc.p*(1-tc.p)
		// The standard error of the variance of a near-normal sample is σ²·√(2/N).
		if math.Abs(mean-wantMean) > 5*math.Sqrt(wantVar/draws) || math.Abs(variance-wantVar) > 5*wantVar*math.Sqrt(2.0/draws)+0.1 {
			t.Errorf("Binomial(%d, %g): mean %g, variance %g; want %g, %g", tc.n, tc.p, mean, variance, wantMean, wantVar)
		}
	}
}
