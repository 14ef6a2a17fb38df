package releasemanager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/integrations/scope"
	"github.com/medium/picchu/plan/applier"
)

type staticSource []string

func (s staticSource) FiringAlerts(context.Context, scope.App, string, bool) ([]string, error) {
	return s, nil
}

// TestSources_DatadogInsteadOfOrBesidesPrometheus checks which providers
// judge a build, per its target's settings.
func TestSources_DatadogInsteadOfOrBesidesPrometheus(t *testing.T) {
	slo := []picchuv1alpha1.ServiceLevelObjective{{Name: "availability", Enabled: true}}
	disabled := []picchuv1alpha1.ServiceLevelObjective{{Name: "availability"}}
	r := &Reconciler{Prometheus: staticSource{}, Datadog: staticSource{}}
	noDatadog := &Reconciler{Prometheus: staticSource{}}
	for _, tc := range []struct {
		name   string
		r      *Reconciler
		target picchuv1alpha1.RevisionTarget
		want   []string
	}{
		{"SLOs: Prometheus", r, picchuv1alpha1.RevisionTarget{ServiceLevelObjectives: slo}, []string{"Prometheus"}},
		{"no enabled SLO or alert rule: nothing to ask Prometheus", r, picchuv1alpha1.RevisionTarget{ServiceLevelObjectives: disabled}, nil},
		{"Datadog instead of Prometheus", r, picchuv1alpha1.RevisionTarget{ServiceLevelObjectives: slo,
			DatadogMonitoring: picchuv1alpha1.DatadogMonitoring{Enabled: true}}, []string{"Datadog"}},
		{"Datadog with Prometheus", r, picchuv1alpha1.RevisionTarget{ServiceLevelObjectives: slo,
			DatadogMonitoring: picchuv1alpha1.DatadogMonitoring{Enabled: true, WithPrometheus: true}}, []string{"Prometheus", "Datadog"}},
		{"Datadog asked but not configured: still asked (and holds)", noDatadog, picchuv1alpha1.RevisionTarget{
			DatadogMonitoring: picchuv1alpha1.DatadogMonitoring{Enabled: true}}, []string{"Datadog"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range tc.r.sources(&tc.target) {
				got = append(got, s.name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("sources %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("sources %v, want %v", got, tc.want)
				}
			}
		})
	}

	// Datadog asked for without credentials holds the build and says why.
	rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{Targets: []picchuv1alpha1.RevisionTarget{{
		Name: "production", DatadogMonitoring: picchuv1alpha1.DatadogMonitoring{Enabled: true},
	}}}}
	s := &snapshot{rm: &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "a", Target: "production"}}}
	inc := &incarnation{tag: "v2", revision: rev, target: &rev.Spec.Targets[0]}
	inc.status.State.Current = string(release.Canarying)
	s.incarnations = []*incarnation{inc}
	noDatadog.judge(context.Background(), s)
	if inc.verdict != release.Unobserved || len(s.alertProblems) != 1 {
		t.Errorf("verdict %s, problems %v", inc.verdict, s.alertProblems)
	}
	// By default a build is judged at any peak until it is released.
	inc.status.PeakPercent = 80
	inc.status.State.Current = string(release.Releasing)
	inc.verdict = release.Unjudged
	noDatadog.judge(context.Background(), s)
	if inc.verdict == release.Unjudged {
		t.Error("a build releasing at 80 % was not judged")
	}
	inc.status.State.Current = string(release.Released)
	inc.verdict = release.Unjudged
	noDatadog.judge(context.Background(), s)
	if inc.verdict != release.Unjudged {
		t.Errorf("a released build was judged: %s", inc.verdict)
	}
	// With --slo-proven-percent, a build at that peak has proven itself.
	inc.status.State.Current = string(release.Releasing)
	inc.status.PeakPercent = 50
	inc.verdict = release.Unjudged
	original := &Reconciler{Prometheus: staticSource{}, ProvenPercent: 50}
	original.judge(context.Background(), s)
	if inc.verdict != release.Unjudged {
		t.Errorf("a build at its proving peak was judged: %s", inc.verdict)
	}
}

// TestScale_StaleStatus_SizesFromThisRunsObservation: a ramping build is
// sized, and gated, from the pods this run observes on the clusters, not
// from the counts recorded in the status, which lag a run behind.
func TestScale_StaleStatus_SizesFromThisRunsObservation(t *testing.T) {
	min := int32(4)
	target := &picchuv1alpha1.RevisionTarget{Scale: picchuv1alpha1.ScaleInfo{
		Min: &min, Max: 100, TargetCPUUtilizationPercentage: &min,
	}}
	old := &incarnation{tag: "v1", target: target}
	old.status.CurrentPercent, old.status.Scale.Current = 80, 5 // recorded a run ago
	ramping := &incarnation{tag: "v2", target: target}
	ramping.status.CurrentPercent = 20
	s := &snapshot{
		incarnations: []*incarnation{ramping, old},
		fleet:        []*fleetCluster{{obj: &picchuv1alpha1.Cluster{}, live: true, factor: 1}},
		observation: release.Observation{{Name: "a", Live: true, Observed: true, Tags: map[string]release.Replicas{
			"v1": {Desired: 40, Available: 40}, "v2": {Desired: 10, Available: 10},
		}}},
	}
	others := s.others(ramping)
	if len(others) != 1 || others[0].Pods != 40 || others[0].Percent != 80 {
		t.Fatalf("others %+v, want v1's 40 observed pods at 80 %%", others)
	}
	gate := s.capacity(ramping)
	if !gate.HasAutoscaler || gate.Available != 10 || len(gate.Others) != 1 || gate.Others[0].Pods != 40 {
		t.Errorf("capacity input %+v", gate)
	}
	// 40 pods at 80 % are 50 at 100 %; the next step (40 %) needs 20.
	ramping.step = release.Step{State: release.Releasing, Action: release.Sync}
	plan := release.Scale(release.ScaleInput{Step: ramping.step, Scale: target.Scale, Release: picchuv1alpha1.ReleaseInfo{
		Max: 100, GeometricScaling: picchuv1alpha1.GeometricScaling{Start: 10, Factor: 2},
	}, Percent: 20, Others: others, Factors: s.liveFactorsOf(ramping)})
	if plan.Replicas != 20 {
		t.Errorf("ramp replicas %d, want 20", plan.Replicas)
	}
}

// decideFleet is app shop's v2 recorded at 40 % and v1 at 60 %, both for
// long, on three live clusters of which north cannot be reached; failed
// says v2's Revision is failed.
func decideFleet(failed bool) (*snapshot, *incarnation, *incarnation) {
	min := int32(3)
	target := func() *picchuv1alpha1.RevisionTarget {
		return &picchuv1alpha1.RevisionTarget{
			Scale: picchuv1alpha1.ScaleInfo{Min: &min, Max: 3},
			Release: picchuv1alpha1.ReleaseInfo{Max: 100, GeometricScaling: picchuv1alpha1.GeometricScaling{
				Start: 10, Factor: 2, Delay: &metav1.Duration{Duration: 10 * time.Second}}},
		}
	}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	long := picchuv1alpha1.NewTimestamp(now.Add(-time.Minute))
	inc := func(tag string, state release.State, percent int32) *incarnation {
		i := &incarnation{tag: tag, target: target(), revision: &picchuv1alpha1.Revision{}}
		i.status.State.Current, i.status.CurrentPercent, i.status.LastUpdated = string(state), percent, &long
		i.status.PeakPercent, i.status.ReleaseEligible = 100, true
		return i
	}
	v2, v1 := inc("v2", release.Releasing, 40), inc("v1", release.Released, 60)
	v2.revision.Spec.Failed = failed
	s := &snapshot{now: now, incarnations: []*incarnation{v2, v1}}
	for _, name := range []string{"east", "west", "north"} {
		fc := &fleetCluster{obj: &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}}, live: true, factor: 1}
		obs := release.ClusterObservation{Name: name, Live: true}
		if name != "north" {
			fc.conn = &applier.Cluster{}
			obs.Observed, obs.Tags = true, map[string]release.Replicas{"v1": {Desired: 1, Available: 1}, "v2": {Desired: 1, Available: 1}}
		} else {
			fc.problem = "not ready: Unreachable"
		}
		s.fleet, s.observation = append(s.fleet, fc), append(s.observation, obs)
	}
	return s, v2, v1
}

// TestDecide_ARollbackIsNotHeldByAClusterThatCannotBeReached: a live
// cluster that cannot be reached holds every step up, but traffic leaving
// a failing build goes on in the clusters that answer, gated by their pods
// alone.
func TestDecide_ARollbackIsNotHeldByAClusterThatCannotBeReached(t *testing.T) {
	s, v2, v1 := decideFleet(true)
	s.decide(release.DefaultTimeouts, nil)
	if !s.rollback || v2.step.State != release.Failing || v2.weight != 0 || v1.weight != 100 {
		t.Errorf("rollback %t: v2 %s at %d %%, v1 at %d %%; want v2 failing at 0 %%, v1 at 100 %%", s.rollback, v2.step.State, v2.weight, v1.weight)
	}

	s, v2, v1 = decideFleet(false)
	s.decide(release.DefaultTimeouts, nil)
	if s.rollback || v2.weight != 40 || v1.weight != 60 || v2.ramp.Waiting != "hold" {
		t.Errorf("rollback %t: v2 at %d %% (waiting %q), v1 at %d %%; want the step up held at 40 %%", s.rollback, v2.weight, v2.ramp.Waiting, v1.weight)
	}
}

// trafficSource fires no alert and says unreached of every metric asked
// about, or fails with err; asked records the metrics asked about.
type trafficSource struct {
	unreached bool
	err       error
	asked     []string
}

func (*trafficSource) FiringAlerts(context.Context, scope.App, string, bool) ([]string, error) {
	return nil, nil
}

func (s *trafficSource) Unreached(_ context.Context, _ scope.App, _ string, metrics []string) ([]string, error) {
	s.asked = append(s.asked, metrics...)
	if s.err != nil {
		return nil, s.err
	}
	if s.unreached {
		return metrics, nil
	}
	return []string{}, nil
}

// TestJudge_ACanaryNoRequestReachedHolds: once a canary has run its time,
// its enabled SLOs' recorded totals must show requests for its tag, or it
// holds (NoEvidence, said in the snapshot) unless it opted out; a canary
// still running its time asks nothing.
func TestJudge_ACanaryNoRequestReachedHolds(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		src       *trafficSource
		started   time.Duration // before now
		optOut    bool
		want      release.Verdict
		wantAsked bool
	}{
		{"no request after its time holds", &trafficSource{unreached: true}, time.Minute, false, release.NoEvidence, true},
		{"requests counted pass", &trafficSource{}, time.Minute, false, release.Healthy, true},
		{"still running its time: nothing asked", &trafficSource{unreached: true}, 5 * time.Second, false, release.Healthy, false},
		{"opted out: nothing asked", &trafficSource{unreached: true}, time.Minute, true, release.Healthy, false},
		{"Prometheus failing: unobserved", &trafficSource{err: errors.New("boom")}, time.Minute, false, release.Unobserved, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{Targets: []picchuv1alpha1.RevisionTarget{{
				Name:   "production",
				Canary: picchuv1alpha1.Canary{Percent: 10, TTL: 30, AllowNoTraffic: tc.optOut},
				ServiceLevelObjectives: []picchuv1alpha1.ServiceLevelObjective{
					{Name: "availability", Enabled: true, ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{TotalQuery: "sum(x)", ErrorQuery: "sum(y)"}},
					{Name: "off", ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{TotalQuery: "sum(x)", ErrorQuery: "sum(y)"}},
				},
			}}}}
			s, inc := canarySnapshot(rev, now, now.Add(-tc.started))
			(&Reconciler{Prometheus: tc.src}).judge(context.Background(), s)
			if inc.verdict != tc.want {
				t.Errorf("verdict %s, want %s", inc.verdict, tc.want)
			}
			if asked := len(tc.src.asked) > 0; asked != tc.wantAsked || (asked && tc.src.asked[0] != "shop:availability:total") || len(tc.src.asked) > 1 {
				t.Errorf("asked about %v, want only shop:availability:total: %t", tc.src.asked, tc.wantAsked)
			}
			if held := len(s.noEvidence) > 0; held != (tc.want == release.NoEvidence) {
				t.Errorf("snapshot says %v", s.noEvidence)
			}
		})
	}
}

// groupSource fires no alert and says ungrouped the monitors it lists.
type groupSource []string

func (groupSource) FiringAlerts(context.Context, scope.App, string, bool) ([]string, error) {
	return nil, nil
}

func (g groupSource) Ungrouped(context.Context, scope.App, string, bool) ([]string, error) {
	return g, nil
}

// TestJudge_ADatadogMonitorWithoutAGroupHoldsTheCanary: a grouped monitor
// with no group for the build counted nothing of it: the canary holds.
func TestJudge_ADatadogMonitorWithoutAGroupHoldsTheCanary(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		src  groupSource
		want release.Verdict
	}{{groupSource{"shop error rate"}, release.NoEvidence}, {groupSource{}, release.Healthy}} {
		rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{Targets: []picchuv1alpha1.RevisionTarget{{
			Name: "production", Canary: picchuv1alpha1.Canary{Percent: 10, TTL: 30},
			DatadogMonitoring: picchuv1alpha1.DatadogMonitoring{Enabled: true},
		}}}}
		s, inc := canarySnapshot(rev, now, now.Add(-time.Minute))
		(&Reconciler{Datadog: tc.src}).judge(context.Background(), s)
		if inc.verdict != tc.want || (tc.want == release.NoEvidence && !strings.Contains(fmt.Sprint(s.noEvidence), "shop error rate (Datadog)")) {
			t.Errorf("ungrouped %v: verdict %s (%v), want %s", tc.src, inc.verdict, s.noEvidence, tc.want)
		}
	}
}

// canarySnapshot is app shop's build v2 of rev canarying in production
// since started, decided at now.
func canarySnapshot(rev *picchuv1alpha1.Revision, now, started time.Time) (*snapshot, *incarnation) {
	s := &snapshot{now: now, rm: &picchuv1alpha1.ReleaseManager{Spec: picchuv1alpha1.ReleaseManagerSpec{App: "shop", Target: "production"}}}
	inc := &incarnation{tag: "v2", revision: rev, target: &rev.Spec.Targets[0]}
	inc.status.State.Current = string(release.Canarying)
	start := picchuv1alpha1.NewTimestamp(started)
	inc.status.CanaryStartTimestamp = &start
	s.incarnations = []*incarnation{inc}
	return s, inc
}

// countsSource fires no alert, says every metric counted requests in
// every cluster, and answers Counts with the counts it holds, by the
// SLI's recorded metric, tag and cluster label value.
type countsSource map[string]map[string]map[string]float64

func (countsSource) FiringAlerts(context.Context, scope.App, string, bool) ([]string, error) {
	return nil, nil
}

func (s countsSource) ReachedIn(_ context.Context, _ scope.App, _ string, metrics []string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, m := range metrics {
		out[m] = []string{""}
	}
	return out, nil
}

func (s countsSource) Counts(_ context.Context, _ scope.App, sli prometheus.SLI, _ []string, _ time.Duration) (prometheus.SLICounts, error) {
	return prometheus.SLICounts{Total: s[sli.RecordedTotal], Errors: s[sli.RecordedErrors]}, nil
}

// TestJudge_APooledBaselineFailureNamesTheClustersCompared: a canary
// significantly worse than its baseline, with no cluster worse than the
// others, failed in every cluster compared: each is named (by its Cluster,
// found by its label value), with its own figures. A gate of one cluster
// (a wave's) names that cluster. A series without the cluster label names
// none.
func TestJudge_APooledBaselineFailureNamesTheClustersCompared(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	// v2 errs 40 % wherever it serves, v1 never.
	counts := func(labels ...string) countsSource {
		src := countsSource{"shop:availability:total": {"v2": {}, "v1": {}}, "shop:availability:errors": {"v2": {}, "v1": {}}}
		for _, l := range labels {
			src["shop:availability:total"]["v2"][l], src["shop:availability:errors"]["v2"][l] = 500, 200
			src["shop:availability:total"]["v1"][l], src["shop:availability:errors"]["v1"][l] = 4500, 0
		}
		return src
	}
	for _, tc := range []struct {
		name     string
		clusters []string // Cluster names, each labelled with its name's first part
		src      countsSource
		want     string // what firingWhere says
	}{
		{"a wave of one cluster", []string{"west-waves"}, counts("west"), "cluster west-waves"},
		{"two clusters", []string{"east-waves", "west-waves"}, counts("east", "west"), "clusters east-waves, west-waves"},
		{"series without the cluster label", []string{"east-waves", "west-waves"}, counts(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev := &picchuv1alpha1.Revision{Spec: picchuv1alpha1.RevisionSpec{Targets: []picchuv1alpha1.RevisionTarget{{
				Name:   "production",
				Canary: picchuv1alpha1.Canary{Percent: 10, TTL: 30},
				ServiceLevelObjectives: []picchuv1alpha1.ServiceLevelObjective{{
					Name: "availability", Enabled: true, ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
						TotalQuery: "sum(x)", ErrorQuery: "sum(y)",
						Canary: picchuv1alpha1.SLICanaryConfig{Baseline: &picchuv1alpha1.SLIBaseline{MinRequests: 100}},
					},
				}},
			}}}}
			s, inc := canarySnapshot(rev, now, now.Add(-time.Minute))
			v1 := &incarnation{tag: "v1"}
			v1.status.State.Current, v1.status.CurrentPercent = string(release.Released), 90
			s.incarnations = append(s.incarnations, v1)
			for _, name := range tc.clusters {
				label, _, _ := strings.Cut(name, "-")
				s.fleet = append(s.fleet, &fleetCluster{live: true, obj: &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: picchuv1alpha1.ClusterSpec{Prometheus: &picchuv1alpha1.ClusterPrometheus{ClusterLabelValue: label}}}})
			}
			(&Reconciler{Prometheus: tc.src}).judge(context.Background(), s)
			if inc.verdict != release.Firing || !strings.Contains(inc.comparison, "v2 fails availability") {
				t.Fatalf("verdict %s (%q), want firing, v2 failing availability", inc.verdict, inc.comparison)
			}
			if got := s.firingWhere(inc); got != tc.want {
				t.Errorf("firing where %q, want %q", got, tc.want)
			}
			for _, name := range tc.clusters {
				named := tc.want != ""
				if got := inc.firingIn[name]; named != (len(got) == 1 && got[0] == "availability_baseline") {
					t.Errorf("%s: firing %v", name, got)
				}
				if v := inc.clusterVerdicts[name]; named != (v == "worse than v1: 40.0 % errors (200 of 500) against 0.0 % (0 of 4500)") {
					t.Errorf("%s: verdict %q", name, v)
				}
			}
		})
	}
}
