package compare

import (
	"math"
	"slices"
)

// DefaultConfidence is the confidence of the comparison when
// Config.Confidence is 0: a canary that is no worse than its baseline fails
// at most 1 % of the time.
const DefaultConfidence = 0.99

// PooledShare is the share of 1 − confidence the pooled comparison gets
// when the outlier tests run; the rest, 1 − PooledShare, is shared equally
// among the clusters they compare (Bonferroni), so that the false failures
// of the whole verdict stay at or under 1 − confidence. With no cluster to
// compare the pooled comparison gets it all.
const PooledShare = 0.9

// DefaultClusterFraction is the fraction of Config.MinRequests a cluster's
// canary (and the canary in the other clusters) needs before the cluster is
// compared for outliers, when Config.MinClusterRequests is 0. The test is
// exact at any size, so the minimum is not there for the false failures:
// it keeps a cluster from being named on a handful of requests (three
// errors of three), while at the default (324 requests, some 3 errors at
// 1 %) a cluster at ten times the others is still named.
const DefaultClusterFraction = 0.1

// maxCount bounds every count Compare reads: no window holds 10¹⁵ requests
// in one cluster, and sums of counts so bounded stay finite.
const maxCount = 1e15

// Counts are a build's requests and errors over the window, in one cluster
// or pooled over several. They are floats because Prometheus' increase()
// extrapolates and so is not a whole number.
type Counts struct {
	Requests, Errors float64
}

// Ratio returns the error ratio, Errors/Requests, or 0 without requests.
func (c Counts) Ratio() float64 {
	if c.Requests <= 0 {
		return 0
	}
	return c.Errors / c.Requests
}

func (c Counts) add(o Counts) Counts {
	return Counts{Requests: c.Requests + o.Requests, Errors: c.Errors + o.Errors}
}

// sanitized returns the counts as Compare reads them: a negative or NaN
// count is 0, a count above maxCount (or +Inf) is maxCount, and there are
// no more errors than requests.
func (c Counts) sanitized() Counts {
	r, e := boundCount(c.Requests), boundCount(c.Errors)
	return Counts{Requests: r, Errors: min(e, r)}
}

func boundCount(v float64) float64 {
	switch {
	case math.IsNaN(v) || v < 0:
		return 0
	case v > maxCount:
		return maxCount
	}
	return v
}

// Config is how strict the comparison is. Zero values take the defaults.
type Config struct {
	// Confidence of the one-sided tests: the verdict fails a canary that is
	// no worse than its baseline at most 1 − Confidence of the time.
	// DefaultConfidence when 0 (or not strictly between ½ and 1).
	Confidence float64
	// MinRequests is what each side (the canary and the baseline, pooled
	// over the clusters compared) needs before a verdict; below it the
	// outcome is TooFew. DefaultMinRequests(Confidence) when 0 (or not a
	// positive number).
	MinRequests float64
	// MinClusterRequests is what a cluster's canary, and the canary in the
	// other clusters, need before the cluster is compared for outliers.
	// DefaultClusterFraction × MinRequests when 0 (or not a positive
	// number).
	MinClusterRequests float64
}

// withDefaults returns the configuration with every unset or invalid value
// replaced by its default.
func (c Config) withDefaults() Config {
	c.Confidence = confidenceOrDefault(c.Confidence)
	if !positive(c.MinRequests) {
		c.MinRequests = DefaultMinRequests(c.Confidence)
	}
	if !positive(c.MinClusterRequests) {
		c.MinClusterRequests = DefaultClusterFraction * c.MinRequests
	}
	return c
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// Input is what Compare judges: the canary's and the baseline's counts over
// the same window, by cluster name.
type Input struct {
	Canary, Baseline map[string]Counts
	Config
}

// Outcome is Compare's verdict.
type Outcome int

const (
	// TooFew: a side has fewer requests than the minimum; the canary holds,
	// it neither passes nor fails. It is the zero Outcome.
	TooFew Outcome = iota
	// Pass: the canary is not significantly worse than its baseline, and no
	// cluster is an outlier.
	Pass
	// Fail: the canary is significantly worse than its baseline, or a
	// cluster is an outlier.
	Fail
)

// String returns "too few requests", "pass" or "fail".
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	default:
		return "too few requests"
	}
}

// Result is Compare's verdict with the figures it rests on.
type Result struct {
	Outcome Outcome
	// Clusters are those compared, sorted: the clusters both the canary's
	// and the baseline's counts name. A cluster only one of them names is
	// left out, so both sides are counted in the same clusters.
	Clusters []string
	// Canary and Baseline are the counts pooled over Clusters.
	Canary, Baseline Counts
	// P is the one-sided p-value that the canary's error ratio is higher
	// than the baseline's, divided by the share of 1 − Confidence the pooled
	// comparison gets (PooledShare when clusters are compared for outliers)
	// and at most 1, so it compares with 1 − Confidence directly; 1 when
	// the outcome is TooFew.
	P float64
	// Confidence, MinRequests and MinClusterRequests are those the verdict
	// used, defaults applied.
	Confidence, MinRequests, MinClusterRequests float64
	// Outliers are the clusters whose canary is significantly worse than
	// the canary in the other clusters and than the baseline there, by
	// cluster name. Empty when the outcome is TooFew.
	Outliers []Outlier
}

// Outlier is a cluster whose canary is significantly worse than the rest.
type Outlier struct {
	Cluster string
	// Canary is the canary's counts in the cluster, Others the canary's in
	// the other clusters pooled, Baseline the baseline's in the cluster.
	Canary, Others, Baseline Counts
	// BaselineCompared tells whether Baseline had the cluster minimum and
	// so was compared too.
	BaselineCompared bool
	// P is the larger one-sided p-value of the cluster's canary against
	// Others and against Baseline, multiplied by the number of clusters
	// compared and divided by 1 − PooledShare (Bonferroni), at most 1: the
	// cluster is an outlier at 1 − P confidence.
	P float64
}

// Compare judges the canary against its baseline from their counts by
// cluster: pooled over the clusters both name, and cluster by cluster for
// outliers. It is a pure function: the same input gives the same result.
// The package documentation gives the tests and their defaults.
func Compare(in Input) Result {
	cfg := in.Config.withDefaults()
	r := Result{
		P:                  1,
		Confidence:         cfg.Confidence,
		MinRequests:        cfg.MinRequests,
		MinClusterRequests: cfg.MinClusterRequests,
	}
	canary, baseline := map[string]Counts{}, map[string]Counts{}
	for name, c := range in.Canary {
		b, ok := in.Baseline[name]
		if !ok {
			continue
		}
		canary[name], baseline[name] = c.sanitized(), b.sanitized()
		r.Clusters = append(r.Clusters, name)
	}
	slices.Sort(r.Clusters)
	for _, name := range r.Clusters {
		r.Canary, r.Baseline = r.Canary.add(canary[name]), r.Baseline.add(baseline[name])
	}
	if r.Canary.Requests < cfg.MinRequests || r.Baseline.Requests < cfg.MinRequests {
		return r
	}
	alpha := 1 - cfg.Confidence
	var compared int
	r.Outliers, compared = outliers(r.Clusters, canary, baseline, cfg)
	share := 1.0
	if compared > 0 {
		share = PooledShare
	}
	r.P = min(1, worse(r.Canary, r.Baseline)/share)
	r.Outcome = Pass
	if (r.P < alpha && r.Canary.Ratio() > r.Baseline.Ratio()) || len(r.Outliers) > 0 {
		r.Outcome = Fail
	}
	return r
}

// outliers compares each cluster's canary with the canary in the other
// clusters pooled and, when the baseline there has the cluster minimum,
// with the baseline in the same cluster; a cluster is an outlier when both
// comparisons are significant at its Bonferroni share of 1 − confidence
// and its ratio is the higher in both. It returns the outliers and how many
// clusters were compared: those whose canary, and whose other clusters'
// canary, have the cluster minimum.
//
// Requiring the cluster's own baseline to be worse too keeps a cluster
// that is bad for every build (a regional outage) from being blamed on the
// canary; requiring both is an intersection-union test, whose p-value is
// the larger of the two.
func outliers(clusters []string, canary, baseline map[string]Counts, cfg Config) ([]Outlier, int) {
	var candidates []Outlier
	for _, name := range clusters {
		var others Counts
		for _, other := range clusters {
			if other != name {
				others = others.add(canary[other])
			}
		}
		c := canary[name]
		if c.Requests < cfg.MinClusterRequests || others.Requests < cfg.MinClusterRequests {
			continue
		}
		candidates = append(candidates, Outlier{Cluster: name, Canary: c, Others: others, Baseline: baseline[name]})
	}
	share := (1 - PooledShare) / float64(len(candidates))
	var found []Outlier
	for _, o := range candidates {
		p := worse(o.Canary, o.Others)
		higher := o.Canary.Ratio() > o.Others.Ratio()
		if o.Baseline.Requests >= cfg.MinClusterRequests {
			o.BaselineCompared = true
			p = max(p, worse(o.Canary, o.Baseline))
			higher = higher && o.Canary.Ratio() > o.Baseline.Ratio()
		}
		o.P = min(1, p/share)
		if o.P < 1-cfg.Confidence && higher {
			found = append(found, o)
		}
	}
	return found, len(candidates)
}

// worse returns the one-sided p-value that a's error ratio is higher than
// b's, by the exact conditional test for two Poisson rates: given the
// errors of both, K = xa + xb, a's errors are Binomial(K, π) when the
// ratios are equal, π = na/(na + nb), and the p-value is P(X ≥ xa). Errors
// are rounded to whole numbers (increase() is not one); requests need not
// be. Without requests on a side it is 1.
func worse(a, b Counts) float64 {
	if a.Requests <= 0 || b.Requests <= 0 {
		return 1
	}
	xa, xb := math.Round(a.Errors), math.Round(b.Errors)
	return upperTail(xa, xa+xb, a.Requests/(a.Requests+b.Requests))
}
