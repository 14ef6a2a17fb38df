package releasemanager

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
)

// baselineSnapshot is app shop's build v2 canarying, past its time, in
// production's one cluster west (label "west"), against v1 released at
// 90 %; its SLO availability compares it with v1, each needing 100
// requests.
func baselineSnapshot(allowNoTraffic bool) (*snapshot, *incarnation) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{Targets: []picchuv1alpha1.RevisionTarget{{
		Name:   "production",
		Canary: picchuv1alpha1.Canary{Percent: 10, TTL: 30, AllowNoTraffic: allowNoTraffic},
		ServiceLevelObjectives: []picchuv1alpha1.ServiceLevelObjective{{
			Name: "availability", Enabled: true, ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
				TagKey:     "destination_version",
				TotalQuery: `sum by (destination_version) (istio_requests_total{destination_app="shop"})`,
				ErrorQuery: `sum by (destination_version) (istio_requests_total{destination_app="shop",response_code=~"5.."})`,
				Canary:     picchuv1alpha1.SLICanaryConfig{Baseline: &picchuv1alpha1.SLIBaseline{MinRequests: 100}},
			},
		}},
	}}}}
	s, inc := canarySnapshot(rev, now, now.Add(-time.Minute))
	v1 := &incarnation{tag: "v1"}
	v1.status.State.Current, v1.status.CurrentPercent = string(release.Released), 90
	s.incarnations = append(s.incarnations, v1)
	s.fleet = append(s.fleet, &fleetCluster{live: true, obj: &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "west"},
		Spec: picchuv1alpha1.ClusterSpec{Prometheus: &picchuv1alpha1.ClusterPrometheus{ClusterLabelValue: "west"}}}})
	return s, inc
}

// westCounts are counts of v2 and v1 in west: requests and errors each.
func westCounts(v2, v2Errors, v1, v1Errors float64) countsSource {
	return countsSource{
		"shop:availability:total":  {"v2": {"west": v2}, "v1": {"west": v1}},
		"shop:availability:errors": {"v2": {"west": v2Errors}, "v1": {"west": v1Errors}},
	}
}

// TestJudge_AllowNoTrafficPassesABaselineComparisonOnTooFewRequests:
// canary.allowNoTraffic lets a build pass that served too few requests to
// compare with its baseline, and its comparison (its status' verdict) says
// so; without it the build holds. With enough requests, a build worse than
// its baseline fails all the same, and one as good passes saying nothing.
func TestJudge_AllowNoTrafficPassesABaselineComparisonOnTooFewRequests(t *testing.T) {
	for _, tc := range []struct {
		name           string
		allowNoTraffic bool
		src            countsSource
		want           release.Verdict
		comparison     string // "" for none; else the whole text, or its start before "…"
	}{
		{"too few, allowed: passes, saying so", true, westCounts(20, 0, 4500, 0), release.Healthy,
			"v2 passes availability on too few requests (v2 20, v1 4 500; each needs 100) in 1 cluster, as canary.allowNoTraffic lets it"},
		{"too few, not allowed: holds", false, westCounts(20, 0, 4500, 0), release.NoEvidence,
			"v2 holds availability: too few requests (v2 20, v1 4 500; each needs 100) in 1 cluster"},
		{"enough and worse, allowed: fails", true, westCounts(500, 200, 4500, 0), release.Firing,
			"v2 fails availability: 40.0 % errors (200 of 500) against v1's 0 % (0 of 4 500) in 1 cluster…"},
		{"enough and as good, allowed: passes, saying nothing", true, westCounts(500, 5, 4500, 45), release.Healthy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, inc := baselineSnapshot(tc.allowNoTraffic)
			(&Reconciler{Prometheus: tc.src}).judge(context.Background(), s)
			if inc.verdict != tc.want {
				t.Errorf("verdict %s (%q), want %s", inc.verdict, inc.comparison, tc.want)
			}
			if prefix, cut := strings.CutSuffix(tc.comparison, "…"); (cut && !strings.HasPrefix(inc.comparison, prefix)) || (!cut && inc.comparison != tc.comparison) {
				t.Errorf("comparison %q, want %q", inc.comparison, tc.comparison)
			}
			if held := len(s.noEvidence) > 0; held != (tc.want == release.NoEvidence) {
				t.Errorf("held in the snapshot: %v", s.noEvidence)
			}
			if failed := slices.Contains(inc.firing, "availability_baseline"); failed != (tc.want == release.Firing) {
				t.Errorf("firing %v", inc.firing)
			}
		})
	}
}

// askedSource answers Counts with its counts and why they were counted
// from the recorded series, and keeps what it was asked.
type askedSource struct {
	countsSource
	recorded string
	asked    []prometheus.SLI
	tags     [][]string
}

func (a *askedSource) Counts(ctx context.Context, app scope.App, sli prometheus.SLI, tags []string, window time.Duration) (prometheus.SLICounts, error) {
	a.asked, a.tags = append(a.asked, sli), append(a.tags, tags)
	counts, err := a.countsSource.Counts(ctx, app, sli, tags, window)
	counts.Recorded = a.recorded
	return counts, err
}

// TestJudge_TheComparisonCountsTheSLIsOwnQueries: the comparison asks for
// the counts of the SLO's own queries and tag key, with its recorded
// series to fall back on, for the build and its baseline; counts that
// came from the recorded series say so, and why, in the comparison.
func TestJudge_TheComparisonCountsTheSLIsOwnQueries(t *testing.T) {
	for _, recorded := range []string{"", "totalQuery max by (x) (y) is not a sum"} {
		s, inc := baselineSnapshot(false)
		src := &askedSource{countsSource: westCounts(500, 200, 4500, 0), recorded: recorded}
		(&Reconciler{Prometheus: src}).judge(context.Background(), s)
		sli := s.incarnations[0].target.ServiceLevelObjectives[0].ServiceLevelIndicator
		want := prometheus.SLI{TotalQuery: sli.TotalQuery, ErrorQuery: sli.ErrorQuery, TagKey: "destination_version",
			RecordedTotal: "shop:availability:total", RecordedErrors: "shop:availability:errors"}
		if len(src.asked) != 1 || src.asked[0] != want || !slices.Equal(src.tags[0], []string{"v2", "v1"}) {
			t.Errorf("asked %+v for %v, want %+v for v2 and v1", src.asked, src.tags, want)
		}
		if inc.verdict != release.Firing {
			t.Fatalf("verdict %s, want firing", inc.verdict)
		}
		note := "; counted from the recorded shop:availability:total and shop:availability:errors, whose increase counts again what the other pods served before when a pod's series leaves the sum, because " + recorded
		if said := strings.HasSuffix(inc.comparison, note); said != (recorded != "") {
			t.Errorf("recorded %q: comparison %q", recorded, inc.comparison)
		}
	}
}

// TestJudge_APassOnTooFewRequestsStaysOnRecordBetweenGates: the verdict of
// a build let pass on too few requests stays in its status while it ramps
// on, past its gate; a hold or a failure on record is not carried so.
func TestJudge_APassOnTooFewRequestsStaysOnRecordBetweenGates(t *testing.T) {
	passed := "v2 passes availability on too few requests (v2 20, v1 4 500; each needs 100) in 1 cluster, as canary.allowNoTraffic lets it"
	for _, recorded := range []string{passed, "v2 holds availability: too few requests (v2 20, v1 4 500; each needs 100) in 1 cluster"} {
		s, inc := baselineSnapshot(true)
		inc.status.State.Current, inc.status.CurrentPercent, inc.status.Verdict = string(release.Releasing), 20, recorded
		if _, atGate := s.gateOf(inc); atGate {
			t.Fatal("a build ramping without waves is at a gate")
		}
		(&Reconciler{Prometheus: westCounts(20, 0, 4500, 0)}).judge(context.Background(), s)
		if inc.verdict != release.Healthy {
			t.Fatalf("verdict %s, want healthy", inc.verdict)
		}
		if kept := inc.comparison == recorded; kept != (recorded == passed) {
			t.Errorf("recorded %q: comparison %q", recorded, inc.comparison)
		}
	}
}
