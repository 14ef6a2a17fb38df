package compare

import (
	"math"
	"slices"
	"strings"
	"testing"
)

var names = Names{Canary: "v7", Baseline: "v6", SLO: "availability", Wave: "us"}

// one is a wave of one cluster, "east".
func one(canary, baseline Counts) Input {
	return Input{Canary: map[string]Counts{"east": canary}, Baseline: map[string]Counts{"east": baseline}}
}

// TestCompare_EqualRatiosPass: the same error ratio on both sides passes,
// with a p-value far from significance, and says so with the figures.
func TestCompare_EqualRatiosPass(t *testing.T) {
	in := Input{
		Canary:   map[string]Counts{"east": {6000, 60}, "north": {5000, 50}, "west": {7000, 70}},
		Baseline: map[string]Counts{"east": {6100, 61}, "north": {4900, 49}, "west": {6800, 68}},
	}
	r := Compare(in)
	if r.Outcome != Pass || len(r.Outliers) > 0 || r.P < 0.3 {
		t.Fatalf("equal ratios: %v with p %g and outliers %v, want a pass far from significance", r.Outcome, r.P, r.Outliers)
	}
	want := "v7 passes availability: 1.0 % errors (180 of 18 000) against v6's 1.0 % (178 of 17 800) in wave us (3 clusters), one-sided p = " + strings.TrimPrefix(pValue(r.P), "p = ")
	if got := r.Describe(names); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}

// TestCompare_DoublingFailsWithFigures: a canary at twice its baseline's
// ratio with plenty of requests fails, and Describe gives both ratios,
// their counts and the p-value.
func TestCompare_DoublingFailsWithFigures(t *testing.T) {
	r := Compare(one(Counts{17880, 412}, Counts{17790, 161}))
	if r.Outcome != Fail || r.P >= 0.001 {
		t.Fatalf("2.3 %% against 0.9 %%: %v with p %g, want a failure at p < 0.001", r.Outcome, r.P)
	}
	want := "v7 fails availability: 2.3 % errors (412 of 17 880) against v6's 0.9 % (161 of 17 790) in wave us (1 cluster), one-sided p < 0.001"
	if got := r.Describe(names); got != want {
		t.Errorf("Describe:\n got %s\nwant %s", got, want)
	}
}

// TestCompare_OutlierNamed: one cluster whose canary errs ten times as
// often as in the others (which match the baseline) is named an outlier
// and fails the build, with its figures; also when it has so little of
// the traffic that the pooled comparison alone would pass.
func TestCompare_OutlierNamed(t *testing.T) {
	baseline := map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {6000, 60}}
	for _, tc := range []struct {
		name       string
		west       Counts
		pooledFail bool
		want       string
	}{{
		name: "an even share of the traffic", west: Counts{6000, 600}, pooledFail: true,
		want: "v7 fails availability: 4.0 % errors (720 of 18 000) against v6's 1.0 % (180 of 18 000) in wave us (3 clusters), one-sided p < 0.001; " +
			"west is an outlier at 10.0 % (600 of 6 000) against 1.0 % (120 of 12 000) in the other clusters and v6's 1.0 % (60 of 6 000) there, p < 0.001",
	}, {
		name: "a small share of the traffic", west: Counts{350, 35}, pooledFail: false,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			canary := map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": tc.west}
			r := Compare(Input{Canary: canary, Baseline: baseline})
			if r.Outcome != Fail {
				t.Fatalf("west at ten times the others: %v, want a failure", r.Outcome)
			}
			if got := (r.P < 1-r.Confidence); got != tc.pooledFail {
				t.Errorf("pooled p %g: significant %v, want %v", r.P, got, tc.pooledFail)
			}
			if len(r.Outliers) != 1 || r.Outliers[0].Cluster != "west" || !r.Outliers[0].BaselineCompared || r.Outliers[0].P >= 0.001 {
				t.Fatalf("outliers %+v, want west alone at p < 0.001, compared with the baseline there", r.Outliers)
			}
			got := r.Describe(names)
			if tc.want != "" && got != tc.want {
				t.Errorf("Describe:\n got %s\nwant %s", got, tc.want)
			}
			if !strings.Contains(got, "west is an outlier at 10.0 % (35 of 350)") && tc.want == "" {
				t.Errorf("Describe: %s, want west named with its figures", got)
			}
		})
	}
}

// TestCompare_TooFewRequestsHold: 20 requests hold, whatever their errors,
// and Describe says "too few requests" with the counts and the minimum.
func TestCompare_TooFewRequestsHold(t *testing.T) {
	for _, errors := range []float64{0, 10, 20} {
		r := Compare(one(Counts{20, errors}, Counts{17790, 161}))
		if r.Outcome != TooFew || len(r.Outliers) > 0 || r.P != 1 {
			t.Fatalf("20 requests with %g errors: %v, p %g, outliers %v; want too few requests", errors, r.Outcome, r.P, r.Outliers)
		}
		want := "v7 holds availability: too few requests (v7 20, v6 17 790; each needs 3 236) in wave us (1 cluster)"
		if got := r.Describe(names); got != want {
			t.Errorf("Describe:\n got %s\nwant %s", got, want)
		}
	}
}

// TestCompare_Cases: the edges of the input and of the configuration.
func TestCompare_Cases(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		in       Input
		want     Outcome
		clusters []string
		outliers []string
		check    func(t *testing.T, r Result)
	}{{
		name: "no errors on either side passes",
		in:   one(Counts{5000, 0}, Counts{5000, 0}),
		want: Pass, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.P != 1 {
				t.Errorf("p %g, want 1", r.P)
			}
		},
	}, {
		name: "a few canary errors against none is not yet significant",
		in:   one(Counts{5000, 5}, Counts{5000, 0}),
		want: Pass, clusters: []string{"east"},
	}, {
		name: "eight canary errors against none fail",
		in:   one(Counts{5000, 8}, Counts{5000, 0}),
		want: Fail, clusters: []string{"east"},
	}, {
		name: "a better canary passes",
		in:   one(Counts{5000, 10}, Counts{5000, 80}),
		want: Pass, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.P < 0.99 {
				t.Errorf("p %g, want near 1", r.P)
			}
		},
	}, {
		name: "no canary requests hold",
		in:   one(Counts{0, 0}, Counts{50000, 500}),
		want: TooFew, clusters: []string{"east"},
	}, {
		name: "no baseline requests hold",
		in:   one(Counts{50000, 500}, Counts{}),
		want: TooFew, clusters: []string{"east"},
	}, {
		name: "no baseline at all holds",
		in:   Input{Canary: map[string]Counts{"east": {50000, 500}}},
		want: TooFew,
	}, {
		name: "more errors than requests count as all requests failing",
		in:   one(Counts{5000, 9000}, Counts{5000, 50}),
		want: Fail, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.Canary != (Counts{5000, 5000}) {
				t.Errorf("canary %+v, want its errors clamped to its requests", r.Canary)
			}
		},
	}, {
		name: "negative and NaN counts count as none",
		in:   one(Counts{-5000, nan}, Counts{nan, -3}),
		want: TooFew, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.Canary != (Counts{}) || r.Baseline != (Counts{}) {
				t.Errorf("counts %+v and %+v, want none", r.Canary, r.Baseline)
			}
		},
	}, {
		name: "whole-number errors from fractional increases",
		in:   one(Counts{3236.4, 64.6}, Counts{3300.2, 32.2}),
		want: Fail, clusters: []string{"east"},
	}, {
		name: "a cluster only the canary has is left out",
		in: Input{
			Canary:   map[string]Counts{"east": {6000, 60}, "west": {6000, 3000}},
			Baseline: map[string]Counts{"east": {6000, 60}},
		},
		want: Pass, clusters: []string{"east"},
	}, {
		name: "a cluster bad for both builds is no outlier",
		in: Input{
			Canary:   map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {6000, 600}},
			Baseline: map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {6000, 610}},
		},
		want: Pass, clusters: []string{"east", "north", "west"},
	}, {
		name: "an outlier where the baseline has too few requests to compare",
		in: Input{
			Canary:   map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {2000, 200}},
			Baseline: map[string]Counts{"east": {9000, 90}, "north": {9000, 90}, "west": {10, 0}},
		},
		want: Fail, clusters: []string{"east", "north", "west"}, outliers: []string{"west"},
		check: func(t *testing.T, r Result) {
			if r.Outliers[0].BaselineCompared {
				t.Errorf("west compared with a baseline of 10 requests")
			}
			if d := r.Describe(names); strings.Contains(d, "there") {
				t.Errorf("Describe gives the baseline's figures it did not compare: %s", d)
			}
		},
	}, {
		name: "a cluster below the cluster minimum is not compared",
		in: Input{
			Canary:   map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {20, 20}},
			Baseline: map[string]Counts{"east": {6000, 60}, "north": {6000, 60}, "west": {20, 0}},
		},
		want: Pass, clusters: []string{"east", "north", "west"},
	}, {
		name: "one cluster has no outlier test: the pooled comparison gets all of 1 − confidence",
		in:   one(Counts{5000, 70}, Counts{5000, 44}),
		want: Fail, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if raw := worse(r.Canary, r.Baseline); r.P != raw {
				t.Errorf("p %g, want the unadjusted %g", r.P, raw)
			}
		},
	}, {
		name: "with outlier tests the pooled p-value is adjusted",
		in: Input{
			Canary:   map[string]Counts{"east": {2500, 35}, "west": {2500, 35}},
			Baseline: map[string]Counts{"east": {2500, 22}, "west": {2500, 22}},
		},
		want: Pass, clusters: []string{"east", "west"},
		check: func(t *testing.T, r Result) {
			raw := worse(r.Canary, r.Baseline)
			if r.P != raw/PooledShare || raw >= 1-r.Confidence {
				t.Errorf("p %g, want %g/%g, and the unadjusted p below 1 − confidence", r.P, raw, PooledShare)
			}
		},
	}, {
		name: "a configured minimum and confidence",
		in: Input{
			Canary: map[string]Counts{"east": {150, 8}}, Baseline: map[string]Counts{"east": {150, 1}},
			Config: Config{Confidence: 0.95, MinRequests: 100},
		},
		want: Fail, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.Confidence != 0.95 || r.MinRequests != 100 || r.MinClusterRequests != 10 {
				t.Errorf("config %g, %g, %g; want 0.95, 100, 10", r.Confidence, r.MinRequests, r.MinClusterRequests)
			}
		},
	}, {
		name: "invalid settings take the defaults",
		in: Input{
			Canary: map[string]Counts{"east": {150, 6}}, Baseline: map[string]Counts{"east": {150, 1}},
			Config: Config{Confidence: 1.5, MinRequests: nan, MinClusterRequests: -1},
		},
		want: TooFew, clusters: []string{"east"},
		check: func(t *testing.T, r Result) {
			if r.Confidence != DefaultConfidence || r.MinRequests != DefaultMinRequests(DefaultConfidence) || r.MinClusterRequests != r.MinRequests*DefaultClusterFraction {
				t.Errorf("config %g, %g, %g; want the defaults", r.Confidence, r.MinRequests, r.MinClusterRequests)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Compare(tc.in)
			if r.Outcome != tc.want {
				t.Errorf("outcome %v (p %g, outliers %+v), want %v", r.Outcome, r.P, r.Outliers, tc.want)
			}
			if !slices.Equal(r.Clusters, tc.clusters) {
				t.Errorf("clusters %v, want %v", r.Clusters, tc.clusters)
			}
			var outliers []string
			for _, o := range r.Outliers {
				outliers = append(outliers, o.Cluster)
			}
			if !slices.Equal(outliers, tc.outliers) {
				t.Fatalf("outliers %v, want %v", outliers, tc.outliers)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// TestCompare_SameInputSameResult: the verdict does not depend on the
// order Go walks the maps in.
func TestCompare_SameInputSameResult(t *testing.T) {
	in := Input{
		Canary:   map[string]Counts{"a": {1000, 13}, "b": {1200, 11}, "c": {900, 30}, "d": {1100, 9}, "e": {800, 12}},
		Baseline: map[string]Counts{"a": {1000, 10}, "b": {1200, 12}, "c": {900, 9}, "d": {1100, 11}, "e": {800, 8}},
	}
	first := Compare(in).Describe(names)
	for range 50 {
		if got := Compare(in).Describe(names); got != first {
			t.Fatalf("Compare gave %s, then %s", first, got)
		}
	}
}
