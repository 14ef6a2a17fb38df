// Package compare judges a canary (a new build) against its baseline (the
// build it replaces) from the requests and errors each served over the same
// window in the same clusters, as an SLO's total and error queries count
// them per cluster. It is pure: counts and settings in, a verdict and its
// figures out, with no client, no clock and no I/O. The caller (the
// ReleaseManager, for an SLO that asks for the comparison) gathers the
// counts and acts on the verdict; Describe renders it for status and
// events.
//
// The prose below, down to the end of this comment, is written to be
// copied into docs/slos.md.
//
// # Comparing a canary with its baseline
//
// Picchu compares the canary's error ratio with the baseline's over the
// same window, in the clusters of the wave that both builds serve (a
// cluster only one of them serves is left out). The verdict is one of:
//
//   - too few requests: the canary or the baseline, pooled over those
//     clusters, has fewer requests than the minimum. The canary holds: it
//     neither passes nor fails, however its errors look.
//   - fail: the canary's error ratio is significantly higher than the
//     baseline's, or a cluster is an outlier (below).
//   - pass: otherwise.
//
// The test is the exact conditional test for two Poisson rates. With xc
// errors in nc requests for the canary and xb in nb for the baseline, and
// K = xc + xb, the canary's share of the errors is, when both builds err
// equally often, Binomial(K, π) with π = nc / (nc + nb). The one-sided
// p-value that the canary is worse is
//
//	p = P(X ≥ xc),  X ~ Binomial(K, π),
//
// and the canary fails when p < 1 − confidence and its ratio xc/nc is
// higher than xb/nb. The test is exact, so unlike a z-test it keeps its
// false failures at or under 1 − confidence with few errors and low error
// ratios. Requests err or not, so the counts are binomial rather than
// Poisson; the canary's share of the errors is then hypergeometric, which
// is narrower than the binomial the test assumes, and that only makes the
// test more cautious. Errors are rounded to whole numbers
// (Prometheus' increase() extrapolates); requests need not be. With no
// errors on either side the canary passes. Counts that are negative or NaN
// count as 0, errors above requests as the requests, and no count exceeds
// 10¹⁵.
//
// # Outliers
//
// A cluster is an outlier when its canary is significantly worse both than
// the canary in the other clusters of the wave, pooled, and than the
// baseline in the same cluster, with the same test for each and the larger
// p-value of the two (an intersection-union test). Requiring the cluster's
// own baseline to be worse keeps a cluster that is bad for every build (a
// regional fault) from being blamed on the canary; when the baseline has
// fewer than the cluster minimum there, only the other clusters are
// compared. A cluster is compared when its canary and the canary in the
// other clusters each have at least the cluster minimum (by default a
// tenth of the minimum), so a wave of one cluster has no outlier test. An
// outlier fails the build even when the pooled comparison passes.
//
// # Confidence and the p-values shown
//
// The confidence (default 99 %) bounds the false failures of the whole
// verdict: a canary that errs no more than its baseline fails at most
// 1 − confidence of the time. When clusters are compared for outliers,
// 1 − confidence is shared (Bonferroni): 90 % of it to the pooled
// comparison, and 10 % among the clusters compared, equally. The p-values
// in the verdict are adjusted accordingly, the pooled one divided by 0.9
// and a cluster's multiplied by the number of clusters compared and
// divided by 0.1, so each compares with 1 − confidence directly: "p <
// 0.001" means the verdict holds at 99.9 % confidence at least.
//
// # The minimum number of requests
//
// By default each side needs the requests that catch a canary at twice a
// 1 % error ratio (2 % against 1 %) 80 % of the time: the usual sample size
// for a one-sided comparison of two proportions p1 = 1 % and p2 = 2 %
// (Fleiss, Levin and Paik),
//
//	n0 = (z(1−α)·√(2·p̄·(1−p̄)) + z(0.8)·√(p1·(1−p1) + p2·(1−p2)))² / (p2 − p1)²,  p̄ = (p1 + p2)/2,
//
// with Fleiss, Tytun and Ury's continuity correction, since the test is
// exact and needs more requests than the normal test n0 is for,
//
//	n = n0/4 · (1 + √(1 + 4/(n0·(p2 − p1))))²,
//
// rounded up, where z is the standard normal quantile and α = 0.9 ×
// (1 − confidence), the pooled comparison's share when outlier tests run.
// That is 3 236 requests a side at 99 % confidence (2 097 at 95 %, 4 838 at
// 99.9 %). Without the continuity correction (3 039) the exact test would
// catch a doubling only 78 % of the time, as it would with the
// uncorrected size at the full 1 − confidence (2 964).
//
// # No practical margin
//
// A canary fails when it is significantly worse, however little: at large
// traffic a small but real increase in errors fails it. The comparison is
// over the same window and clusters as the baseline, so such a difference
// is the build's, not the time of day's. A margin (fail only when worse
// than (1 + m) times the baseline's ratio) would need a larger minimum to
// keep catching a doubling; the test takes one directly, by replacing π
// with (1 + m)·nc / ((1 + m)·nc + nb), should it be wanted.
//
// # How well it does
//
// Measured by the package's tests at 99 % confidence: over 10 000 simulated
// windows with equal true ratios of 0.1 %, 1 % and 5 %, at the minimum and
// at ten times it, in one cluster and in three, with the baseline at nine
// times the canary's traffic, and with one cluster at five times the
// others' ratio for both builds, the verdict failed 0.18 % to 0.88 % of
// them; computed exactly over every count in one cluster, 0.21 % to 0.87 %.
// With 2 % against 1 % at exactly the minimum it failed 81.6 % of the
// windows in one cluster (81.9 % computed exactly) and 80.9 % in three
// (the pooled comparison alone, at its 90 % share: 80.7 %).
//
// # What a person reads
//
// The verdict is written with its figures, for example:
//
//	v7 fails availability: 2.3 % errors (412 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (3 clusters), one-sided p < 0.001; west is an outlier at 6.1 % (110 of 1 800) against 1.9 % (302 of 16 080) in the other clusters and v6's 0.9 % (55 of 5 930) there, p < 0.001
//	v7 passes availability: 0.9 % errors (160 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (3 clusters), one-sided p = 0.53
//	v7 holds availability: too few requests (v7 20, v6 17 790; each needs 3 236) in wave us (1 cluster)
package compare
