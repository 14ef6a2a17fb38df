package compare

import (
	"math"
	"strings"
	"testing"
)

// FuzzCompare: whatever the counts (negative, zero, NaN, infinite, huge,
// more errors than requests) and settings, Compare neither panics nor
// returns a NaN or infinite figure, its p-values are probabilities, it
// holds below the minimum, names outliers only when it fails, and Describe
// renders no NaN or Inf.
func FuzzCompare(f *testing.F) {
	f.Add(6000.0, 60.0, 6000.0, 600.0, 6000.0, 60.0, 6000.0, 61.0, 0.0, 0.0)
	f.Add(20.0, 20.0, 0.0, 0.0, 17790.0, 161.0, 0.0, 0.0, 0.99, 0.0)
	f.Add(-1.0, 5.0, 1e300, 1e301, math.Inf(1), math.NaN(), 1e15, 1e15, 0.5, -3.0)
	f.Add(3236.4, 64.6, 0.3, 0.2, 3300.2, 32.2, 0.0, 0.0, 0.95, 100.0)
	f.Add(1e15, 1.0, 1e15, 1e15, 1.0, 0.0, 1e15, 0.0, 0.999999, 1e-9)
	f.Fuzz(func(t *testing.T, eastReq, eastErr, westReq, westErr, bEastReq, bEastErr, bWestReq, bWestErr, confidence, minimum float64) {
		in := Input{
			Canary:   map[string]Counts{"east": {eastReq, eastErr}, "west": {westReq, westErr}},
			Baseline: map[string]Counts{"east": {bEastReq, bEastErr}, "west": {bWestReq, bWestErr}},
			Config:   Config{Confidence: confidence, MinRequests: minimum},
		}
		r := Compare(in)
		finite := func(what string, vs ...float64) {
			for _, v := range vs {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%s: %g in %+v", what, v, r)
				}
			}
		}
		finite("counts", r.Canary.Requests, r.Canary.Errors, r.Baseline.Requests, r.Baseline.Errors, r.Canary.Ratio(), r.Baseline.Ratio())
		finite("settings", r.Confidence, r.MinRequests, r.MinClusterRequests)
		if !(r.P >= 0 && r.P <= 1) {
			t.Fatalf("p %g is no probability", r.P)
		}
		if r.Canary.Errors > r.Canary.Requests || r.Baseline.Errors > r.Baseline.Requests || r.Canary.Errors < 0 || r.Baseline.Errors < 0 {
			t.Fatalf("counts %+v and %+v: errors out of [0, requests]", r.Canary, r.Baseline)
		}
		if (r.Canary.Requests < r.MinRequests || r.Baseline.Requests < r.MinRequests) != (r.Outcome == TooFew) {
			t.Fatalf("%v with %g and %g requests of %g needed", r.Outcome, r.Canary.Requests, r.Baseline.Requests, r.MinRequests)
		}
		if len(r.Outliers) > 0 && r.Outcome != Fail {
			t.Fatalf("outliers %+v in a %v", r.Outliers, r.Outcome)
		}
		for _, o := range r.Outliers {
			finite("outlier", o.Canary.Requests, o.Canary.Errors, o.Others.Requests, o.Others.Errors, o.Baseline.Requests, o.Baseline.Errors)
			if !(o.P >= 0 && o.P < 1-r.Confidence) {
				t.Fatalf("outlier %s at p %g", o.Cluster, o.P)
			}
		}
		if d := r.Describe(Names{Canary: "v7", Baseline: "v6", SLO: "availability", Wave: "us"}); strings.Contains(d, "NaN") || strings.Contains(d, "Inf") {
			t.Fatalf("Describe: %s", d)
		}
	})
}
