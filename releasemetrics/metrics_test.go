package releasemetrics

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// reg is the registry every collector is registered into, once, by TestMain.
var reg = prometheus.NewRegistry()

func TestMain(m *testing.M) {
	if err := Register(reg); err != nil {
		fmt.Fprintln(os.Stderr, "Register:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// family gathers reg and returns the family called name, or nil.
func family(t *testing.T, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// labelsOf returns m's labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// series returns the metrics of the family called name whose labels include
// match.
func series(t *testing.T, name string, match map[string]string) []*dto.Metric {
	t.Helper()
	mf := family(t, name)
	if mf == nil {
		return nil
	}
	var out []*dto.Metric
outer:
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		for k, v := range match {
			if l[k] != v {
				continue outer
			}
		}
		out = append(out, m)
	}
	return out
}

// value returns the value of the gauge or counter c.
func value(t *testing.T, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetCounter().GetValue()
}

// sampleCount returns the number of observations of h for (app, target).
func sampleCount(t *testing.T, h *prometheus.HistogramVec, app, target string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.WithLabelValues(app, target).(prometheus.Metric).Write(&m); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestRegisterIsIdempotent(t *testing.T) {
	if err := Register(reg); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	if err := Register(prometheus.NewRegistry()); err != nil {
		t.Fatalf("Register after the first: %v", err)
	}
	if err := Register(nil); err == nil {
		t.Fatal("Register(nil): want an error")
	}
}

func TestRegisterTreatsAlreadyRegisteredAsSuccess(t *testing.T) {
	r := prometheus.NewRegistry()
	if err := register(r, collectors); err != nil {
		t.Fatalf("register: %v", err)
	}
	if err := register(r, collectors); err != nil {
		t.Fatalf("register again: %v", err)
	}
}

func TestRegisterOnControllerRuntimeRegistry(t *testing.T) {
	if err := register(ctrlmetrics.Registry, collectors); err != nil {
		t.Fatalf("register on controller-runtime's registry: %v", err)
	}
	if _, err := ctrlmetrics.Registry.Gather(); err != nil {
		t.Fatalf("Gather: %v", err)
	}
}

func TestRegisterReturnsFirstError(t *testing.T) {
	r := prometheus.NewRegistry()
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "picchu_deploy_latency", Help: "clash"})
	r.MustRegister(clash)
	err := register(r, collectors)
	if err == nil {
		t.Fatal("register with a clashing collector: want an error")
	}
	if !strings.Contains(err.Error(), "picchu_deploy_latency") {
		t.Errorf("error %q does not name the clashing metric", err)
	}
}

func TestEveryMetricHasNameAndHelp(t *testing.T) {
	want := map[string]bool{
		"picchu_git_create_latency":                 true,
		"picchu_git_deploy_latency":                 true,
		"picchu_git_canary_latency":                 true,
		"picchu_git_pending_release_latency":        true,
		"picchu_git_release_latency":                true,
		"picchu_revision_deploy_latency":            true,
		"picchu_revision_canary_latency":            true,
		"picchu_revision_pending_release_latency":   true,
		"picchu_revision_release_latency":           true,
		"picchu_revision_rollback_latency":          true,
		"picchu_deploy_latency":                     true,
		"picchu_canary_latency":                     true,
		"picchu_release_latency":                    true,
		"picchu_release_manager_reconcile_interval": true,
		"picchu_release_step_lateness_seconds":      true,
		"picchu_revision_release_weight":            true,
		"picchu_release_cluster_weight":             true,
		"picchu_alert_checks_total":                 true,
		"picchu_incarnation_count":                  true,
		"picchu_revision_oldest_age_seconds":        true,
		"picchu_revision_failed":                    true,
		"picchu_release_controls_total":             true,
	}
	if len(collectors) != len(want) {
		t.Fatalf("%d collectors, want %d", len(collectors), len(want))
	}
	for _, c := range collectors {
		ch := make(chan *prometheus.Desc, 1)
		c.Describe(ch)
		close(ch)
		d := (<-ch).String()
		found := false
		for name := range want {
			if strings.Contains(d, `fqName: "`+name+`"`) {
				found = true
				delete(want, name)
				break
			}
		}
		if !found {
			t.Errorf("unexpected collector %s", d)
		}
		if strings.Contains(d, `help: ""`) {
			t.Errorf("collector without help: %s", d)
		}
	}
	for name := range want {
		t.Errorf("no collector for %s", name)
	}
}

func TestBuckets(t *testing.T) {
	Observe("buckets", "production", PhaseDeployed, time.Unix(1000, 0), Build{
		GitTime:        time.Unix(0, 0),
		DeployingStart: time.Unix(900, 0),
		Metrics:        &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{},
	})
	ObserveReconcileInterval("buckets", "production", 12*time.Second)
	for name, want := range map[string][]float64{
		"picchu_git_deploy_latency":                 {120, 360, 1080, 3240, 9720, 29160, 87480, 262440},
		"picchu_deploy_latency":                     {30, 90, 270, 810, 2430, 7290, 21870, 65610},
		"picchu_release_manager_reconcile_interval": {10, 15, 20, 30, 45, 60, 90, 120},
	} {
		ms := series(t, name, map[string]string{"app": "buckets"})
		if len(ms) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(ms))
		}
		var got []float64
		for _, b := range ms[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s buckets = %v, want %v", name, got, want)
		}
	}
}

func TestObserveDeployedOnce(t *testing.T) {
	const app, target = "observe-once", "production"
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{}
	b := Build{
		GitTime:        now.Add(-time.Hour),
		RevisionTime:   now.Add(-30 * time.Minute),
		DeployingStart: now.Add(-90 * time.Second),
		Metrics:        m,
	}
	Observe(app, target, PhaseDeployed, now, b)
	Observe(app, target, PhaseDeployed, now.Add(time.Minute), b)

	for _, c := range []struct {
		name  string
		h     *prometheus.HistogramVec
		field *int
		want  int
	}{
		{"git_deploy", gitDeployLatency, m.GitDeploySecondsInt, 3600},
		{"revision_deploy", revisionDeployLatency, m.RevisionDeploySecondsInt, 1800},
		{"deploy", deployLatency, m.DeploySecondsInt, 90},
	} {
		if n := sampleCount(t, c.h, app, target); n != 1 {
			t.Errorf("%s: %d samples, want 1", c.name, n)
		}
		if c.field == nil {
			t.Errorf("%s: field not set", c.name)
		} else if *c.field != c.want {
			t.Errorf("%s: field = %d, want %d", c.name, *c.field, c.want)
		}
	}
	if m.GitCanarySecondsInt != nil || m.GitReleaseSecondsInt != nil || m.RevisionRollbackSecondsInt != nil {
		t.Errorf("Deployed set the fields of other phases: %+v", m)
	}
}

func TestObserveRespectsExistingRecord(t *testing.T) {
	const app, target = "observe-existing", "production"
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	old := 42
	m := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{GitReleaseSecondsInt: &old}
	Observe(app, target, PhaseReleased, now, Build{
		GitTime:      now.Add(-time.Hour),
		RevisionTime: now.Add(-time.Minute),
		ReleaseStart: now.Add(-10 * time.Second),
		Metrics:      m,
	})
	if n := sampleCount(t, gitReleaseLatency, app, target); n != 0 {
		t.Errorf("git_release: %d samples, want 0 (already recorded)", n)
	}
	if *m.GitReleaseSecondsInt != 42 {
		t.Errorf("git_release field overwritten: %d", *m.GitReleaseSecondsInt)
	}
	if n := sampleCount(t, revisionReleaseLatency, app, target); n != 1 {
		t.Errorf("revision_release: %d samples, want 1", n)
	}
	if n := sampleCount(t, releaseLatency, app, target); n != 1 {
		t.Errorf("release: %d samples, want 1", n)
	}
	if m.ReleaseSecondsInt == nil || *m.ReleaseSecondsInt != 10 {
		t.Errorf("release field = %v, want 10", m.ReleaseSecondsInt)
	}
}

func TestObserveSkipsZeroStartAndNegative(t *testing.T) {
	const app, target = "observe-zero", "production"
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{}
	b := Build{
		// GitTime unknown; the Revision appears to be from the future.
		RevisionTime: now.Add(time.Minute),
		CanaryStart:  now.Add(-5 * time.Minute),
		Metrics:      m,
	}
	Observe(app, target, PhaseCanaried, now, b)
	if n := sampleCount(t, gitCanaryLatency, app, target); n != 0 || m.GitCanarySecondsInt != nil {
		t.Errorf("git_canary with zero GitTime: %d samples, field %v", n, m.GitCanarySecondsInt)
	}
	if n := sampleCount(t, revisionCanaryLatency, app, target); n != 0 || m.RevisionCanarySecondsInt != nil {
		t.Errorf("negative revision_canary: %d samples, field %v", n, m.RevisionCanarySecondsInt)
	}
	if n := sampleCount(t, canaryLatency, app, target); n != 1 || m.CanarySecondsInt == nil || *m.CanarySecondsInt != 300 {
		t.Errorf("canary: %d samples, field %v", n, m.CanarySecondsInt)
	}

	// Once the start is known, a later call observes it.
	b.GitTime = now.Add(-time.Hour)
	Observe(app, target, PhaseCanaried, now.Add(time.Minute), b)
	if n := sampleCount(t, gitCanaryLatency, app, target); n != 1 || m.GitCanarySecondsInt == nil || *m.GitCanarySecondsInt != 3660 {
		t.Errorf("git_canary once known: %d samples, field %v", n, m.GitCanarySecondsInt)
	}
	if n := sampleCount(t, canaryLatency, app, target); n != 1 {
		t.Errorf("canary observed again: %d samples", n)
	}
}

func TestObserveNilMetrics(t *testing.T) {
	const app, target = "observe-nil", "production"
	now := time.Now()
	Observe(app, target, PhaseDeployed, now, Build{GitTime: now.Add(-time.Hour)})
	ObserveCreated(app, target, Build{GitTime: now.Add(-time.Hour), RevisionTime: now})
	if n := sampleCount(t, gitDeployLatency, app, target); n != 0 {
		t.Errorf("git_deploy with nil Metrics: %d samples", n)
	}
	if n := sampleCount(t, gitCreateLatency, app, target); n != 0 {
		t.Errorf("git_create with nil Metrics: %d samples", n)
	}
}

func TestObservePhases(t *testing.T) {
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		phase Phase
		hs    []*prometheus.HistogramVec
		set   func(m *picchuv1alpha1.ReleaseManagerRevisionMetricsStatus) []*int
	}{
		{PhasePendingRelease, []*prometheus.HistogramVec{gitPendingReleaseLatency, revisionPendingReleaseLatency},
			func(m *picchuv1alpha1.ReleaseManagerRevisionMetricsStatus) []*int {
				return []*int{m.GitPendingReleaseSecondsInt, m.RevisionPendingReleaseSecondsInt}
			}},
		{PhaseRolledBack, []*prometheus.HistogramVec{revisionRollbackLatency},
			func(m *picchuv1alpha1.ReleaseManagerRevisionMetricsStatus) []*int {
				return []*int{m.RevisionRollbackSecondsInt}
			}},
	} {
		app := fmt.Sprintf("phase-%d", c.phase)
		m := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{}
		b := Build{
			GitTime:      now.Add(-time.Hour),
			RevisionTime: now.Add(-time.Hour),
			FailingStart: now.Add(-time.Minute),
			Metrics:      m,
		}
		Observe(app, "production", c.phase, now, b)
		Observe(app, "production", c.phase, now, b)
		for i, h := range c.hs {
			if n := sampleCount(t, h, app, "production"); n != 1 {
				t.Errorf("phase %d histogram %d: %d samples, want 1", c.phase, i, n)
			}
		}
		for i, f := range c.set(m) {
			if f == nil {
				t.Errorf("phase %d field %d not set", c.phase, i)
			}
		}
	}
}

func TestObserveCreated(t *testing.T) {
	const app, target = "created", "production"
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	m := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{}
	b := Build{GitTime: now.Add(-2 * time.Minute), RevisionTime: now, Metrics: m}
	ObserveCreated(app, target, b)
	ObserveCreated(app, target, b)
	if n := sampleCount(t, gitCreateLatency, app, target); n != 1 {
		t.Errorf("git_create: %d samples, want 1", n)
	}
	if m.GitCreateSecondsInt == nil || *m.GitCreateSecondsInt != 120 {
		t.Errorf("git_create field = %v, want 120", m.GitCreateSecondsInt)
	}

	m2 := &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{}
	ObserveCreated("created-zero", target, Build{GitTime: now, Metrics: m2})
	if n := sampleCount(t, gitCreateLatency, "created-zero", target); n != 0 || m2.GitCreateSecondsInt != nil {
		t.Errorf("git_create with zero RevisionTime: %d samples, field %v", n, m2.GitCreateSecondsInt)
	}
}

func TestSetWeights(t *testing.T) {
	const app, target = "weights", "production"
	SetWeights("weights-other", target, map[string]int32{"v1": 100})
	SetWeights(app, "staging", map[string]int32{"v1": 100})

	SetWeights(app, target, map[string]int32{"v1": 90, "v2": 10})
	if got := value(t, releaseWeight.WithLabelValues(app, target, "v1")); got != 90 {
		t.Errorf("v1 = %v, want 90", got)
	}
	SetWeights(app, target, map[string]int32{"v2": 100})

	ms := series(t, "picchu_revision_release_weight", map[string]string{"app": app, "target": target})
	if len(ms) != 1 {
		t.Fatalf("%d series, want 1: %v", len(ms), ms)
	}
	if l := labelsOf(ms[0]); l["tag"] != "v2" {
		t.Errorf("tag = %q, want v2", l["tag"])
	}
	if v := ms[0].GetGauge().GetValue(); v != 100 {
		t.Errorf("value = %v, want 100", v)
	}
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": "weights-other", "tag": "v1"})); n != 1 {
		t.Errorf("other app: %d series, want 1", n)
	}
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": app, "target": "staging", "tag": "v1"})); n != 1 {
		t.Errorf("other target: %d series, want 1", n)
	}

	SetWeights(app, target, nil)
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": app, "target": target})); n != 0 {
		t.Errorf("after empty weights: %d series, want 0", n)
	}
}

// TestSetClusterWeights: a series per build and cluster; pairs no longer
// reported, and every pair of an app forgotten, are deleted.
func TestSetClusterWeights(t *testing.T) {
	const app, target = "cluster-weights", "production"
	SetClusterWeights(app, target, map[[2]string]int32{{"v2", "east"}: 100, {"v2", "west"}: 20, {"v1", "west"}: 80})
	if got := value(t, clusterWeight.WithLabelValues(app, target, "v2", "west")); got != 20 {
		t.Errorf("v2 in west = %v, want 20", got)
	}
	SetClusterWeights(app, target, map[[2]string]int32{{"v2", "east"}: 100, {"v2", "west"}: 100})
	ms := series(t, "picchu_release_cluster_weight", map[string]string{"app": app, "target": target})
	if len(ms) != 2 {
		t.Fatalf("%d series, want 2 (v1 gone): %v", len(ms), ms)
	}
	for _, m := range ms {
		if l := labelsOf(m); l["tag"] != "v2" || m.GetGauge().GetValue() != 100 {
			t.Errorf("series %v = %v, want v2 at 100", l, m.GetGauge().GetValue())
		}
	}
	Forget(app, target)
	if n := len(series(t, "picchu_release_cluster_weight", map[string]string{"app": app})); n != 0 {
		t.Errorf("after Forget: %d series, want 0", n)
	}
}

func TestSetStates(t *testing.T) {
	const app, target = "states", "production"
	SetStates(app, target,
		map[string]int{"released": 1, "canarying": 2},
		map[string]Oldest{"released": {Tag: "v1", Age: time.Hour}, "canarying": {Tag: "v2", Age: time.Minute}})
	if got := value(t, incarnationCount.WithLabelValues(app, target, "canarying")); got != 2 {
		t.Errorf("canarying count = %v, want 2", got)
	}
	if got := value(t, oldestAge.WithLabelValues(app, target, "released", "v1")); got != 3600 {
		t.Errorf("released age of v1 = %v, want 3600", got)
	}

	// v3 is now the oldest released build: v1's series goes, and the
	// canarying state's with it.
	SetStates(app, target, map[string]int{"released": 3}, map[string]Oldest{"released": {Tag: "v3", Age: 2 * time.Hour}})
	counts := series(t, "picchu_incarnation_count", map[string]string{"app": app, "target": target})
	if len(counts) != 1 || labelsOf(counts[0])["state"] != "released" || counts[0].GetGauge().GetValue() != 3 {
		t.Errorf("counts after update = %v, want released=3 only", counts)
	}
	ages := series(t, "picchu_revision_oldest_age_seconds", map[string]string{"app": app, "target": target})
	if len(ages) != 1 || labelsOf(ages[0])["state"] != "released" || labelsOf(ages[0])["revision"] != "v3" || ages[0].GetGauge().GetValue() != 7200 {
		t.Errorf("ages after update = %v, want released of revision v3 = 7200 only", ages)
	}
}

func TestForget(t *testing.T) {
	const app, target = "forget", "production"
	for _, tg := range []string{target, "staging"} {
		SetWeights(app, tg, map[string]int32{"v1": 100})
		SetStates(app, tg, map[string]int{"released": 1}, map[string]Oldest{"released": {Tag: "v1", Age: time.Minute}})
	}
	SetWeights("forget-other", target, map[string]int32{"v1": 100})
	ObserveReconcileInterval(app, target, time.Minute)
	ObserveReconcileInterval(app, "staging", time.Minute)
	deployLatency.WithLabelValues(app, target).Observe(1)

	Forget(app, target)
	for _, name := range []string{"picchu_deploy_latency", "picchu_release_manager_reconcile_interval"} {
		if n := len(series(t, name, map[string]string{"app": app, "target": target})); n != 0 {
			t.Errorf("%s: %d series left for the forgotten app/target", name, n)
		}
	}
	if n := len(series(t, "picchu_release_manager_reconcile_interval", map[string]string{"app": app, "target": "staging"})); n != 1 {
		t.Errorf("reconcile interval of another target: %d series, want 1", n)
	}
	for _, name := range []string{"picchu_revision_release_weight", "picchu_incarnation_count", "picchu_revision_oldest_age_seconds"} {
		if n := len(series(t, name, map[string]string{"app": app, "target": target})); n != 0 {
			t.Errorf("%s: %d series left for the forgotten app/target", name, n)
		}
		if n := len(series(t, name, map[string]string{"app": app, "target": "staging"})); n != 1 {
			t.Errorf("%s: %d series for another target, want 1", name, n)
		}
	}
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": "forget-other"})); n != 1 {
		t.Errorf("another app: %d series, want 1", n)
	}

	// Setting after Forget starts afresh.
	SetWeights(app, target, map[string]int32{"v2": 100})
	SetWeights(app, target, map[string]int32{"v3": 100})
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": app, "target": target})); n != 1 {
		t.Errorf("after Forget and two SetWeights: %d series, want 1", n)
	}
}

func TestForgetRevision(t *testing.T) {
	Failed("forget-revision", "v1")
	Failed("forget-revision", "v2")
	ForgetRevision("forget-revision", "v1")
	if n := len(series(t, "picchu_revision_failed", map[string]string{"app": "forget-revision", "tag": "v1"})); n != 0 {
		t.Errorf("v1's failure count stayed: %d series", n)
	}
	if n := len(series(t, "picchu_revision_failed", map[string]string{"app": "forget-revision", "tag": "v2"})); n != 1 {
		t.Errorf("v2's failure count: %d series, want 1", n)
	}
}

func TestFailed(t *testing.T) {
	before := value(t, revisionFailed.WithLabelValues("failed", "v1"))
	Failed("failed", "v1")
	Failed("failed", "v1")
	if got := value(t, revisionFailed.WithLabelValues("failed", "v1")); got != before+2 {
		t.Errorf("failed = %v, want %v", got, before+2)
	}
}

func TestObserveReconcileInterval(t *testing.T) {
	ObserveReconcileInterval("interval", "production", 15*time.Second)
	ObserveReconcileInterval("interval", "production", -time.Second)
	if n := sampleCount(t, reconcileInterval, "interval", "production"); n != 1 {
		t.Errorf("%d samples, want 1", n)
	}
}

func TestConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			app := "concurrent"
			for j := 0; j < 100; j++ {
				tag := fmt.Sprintf("v%d", j%3)
				SetWeights(app, "production", map[string]int32{tag: int32(j)})
				SetStates(app, "production", map[string]int{tag: j}, map[string]Oldest{tag: {Tag: tag, Age: time.Second}})
				Observe(app, "production", PhaseDeployed, time.Now(), Build{
					GitTime: time.Now().Add(-time.Minute),
					Metrics: &picchuv1alpha1.ReleaseManagerRevisionMetricsStatus{},
				})
				if j%10 == i {
					Forget(app, "production")
				}
			}
		}(i)
	}
	wg.Wait()
	SetWeights("concurrent", "production", map[string]int32{"final": 100})
	if n := len(series(t, "picchu_revision_release_weight", map[string]string{"app": "concurrent"})); n != 1 {
		t.Errorf("after concurrent use: %d weight series, want 1", n)
	}
}
