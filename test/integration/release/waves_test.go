package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// regions labels the first target's Cluster region=east and the second's
// region=west, for the waves of these tests, and takes the labels off when
// the test ends.
func regions(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i, region := range []string{"east", "west"} {
		key := client.ObjectKeyFromObject(env.Targets[i].Cluster)
		label := func(value string) {
			cl := &picchuv1alpha1.Cluster{}
			if err := env.Delivery.Client.Get(ctx, key, cl); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(cl.DeepCopy())
			if value == "" {
				delete(cl.Labels, "region")
			} else {
				if cl.Labels == nil {
					cl.Labels = map[string]string{}
				}
				cl.Labels["region"] = value
			}
			if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
				t.Fatal(err)
			}
		}
		label(region)
		t.Cleanup(func() { label("") })
	}
}

// inWaves releases the build in two waves: east (the first target), then
// west (the second) once bake has passed since it was released in east.
func inWaves(rev *picchuv1alpha1.Revision, bake time.Duration) *picchuv1alpha1.Revision {
	rev.Spec.Targets[0].Release.Waves = []picchuv1alpha1.ReleaseWave{
		{Name: "east", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}}, Bake: &metav1.Duration{Duration: bake}},
		{Name: "west"},
	}
	return rev
}

// releasedInWaves labels the targets' regions (regions) and releases app's
// v1 in two waves, east then west, with quick steps and bake: v1 takes
// all the traffic on both targets when it returns.
func releasedInWaves(t *testing.T, app string) {
	t.Helper()
	regions(t)
	traffic.Set(app, "v1", 50, 0)
	v1 := inWaves(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}.revision(), time.Second)
	if err := env.Delivery.Client.Create(context.Background(), v1); err != nil {
		t.Fatal(err)
	}
	state(t, 60*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})
}

// sloAlert is a PrometheusRule of the team's own on the first target, in
// the app's namespace there, which the test's Prometheus evaluates, whose
// SLO alert for app's tag fires at once. It carries the label namespace,
// as prometheus-operator's enforcedNamespaceLabel stamps it on the rules
// of that namespace: without it the alert is no one's.
func sloAlert(name, app, tag string) *monitoringv1.PrometheusRule {
	now := monitoringv1.Duration("0s")
	ns := picchuv1alpha1.AppNamespace(app, "production")
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ToLower(app + "-" + tag + "-" + name)},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "slo", Rules: []monitoringv1.Rule{{
			Alert: name, Expr: intstr.FromString("vector(1)"), For: &now,
			Labels: map[string]string{"slo": "true", "app": app, "tag": tag, "namespace": ns},
		}}}}},
	}
}

// fire makes the SLO alert name fire for app's tag until the test ends.
func fire(t *testing.T, name, app, tag string) {
	t.Helper()
	ctx := context.Background()
	rule := sloAlert(name, app, tag)
	if err := env.Targets[0].Client.Create(ctx, rule); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Targets[0].Client.Delete(context.Background(), rule); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
}

// wavePercents waits until the build ramps in wave (from 0) and its traffic
// there is within [low, high].
func wavePercents(t *testing.T, timeout time.Duration, app, tag string, wave int, low, high int32) {
	t.Helper()
	kit.Eventually(t, timeout, fmt.Sprintf("%s %s in wave %d at %d-%d %%", app, tag, wave, low, high), func() error {
		st, err := statusOf(t, app, tag)
		if err != nil {
			return err
		}
		if int(st.Wave) != wave || len(st.WavePercents) <= wave || st.WavePercents[wave] < low || st.WavePercents[wave] > high {
			return fmt.Errorf("%s, wave %d at %v", st.State.Current, st.Wave, st.WavePercents)
		}
		return nil
	})
}

// failedFor waits until the Revision is failed and returns its reason.
func failedFor(t *testing.T, rev *picchuv1alpha1.Revision) string {
	t.Helper()
	kit.Eventually(t, 60*time.Second, rev.Name+" failed", func() error {
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(rev), rev); err != nil {
			return err
		}
		if !rev.Spec.Failed {
			return fmt.Errorf("not failed (rule sync: %v)", ruleSyncLog.Load())
		}
		return nil
	})
	return rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
}

// TestVerdict_EveryWaveIsJudged releases app "tide" in two waves, east then
// west, and makes an SLO alert fire for a build twice: once while the build
// is released in east alone and west's bake runs (it peaked at 100 % there,
// and used to count as proven), once while it ramps in west. Each time the
// build fails, with a reason naming the waves it served, and its traffic
// goes back to the released build in both clusters.
func TestVerdict_EveryWaveIsJudged(t *testing.T) {
	const app = "tide"
	releasedInWaves(t, app)

	// v2 is released in east, and west bakes for a minute.
	traffic.Set(app, "v2", 5, 0)
	v2 := inWaves(build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond}.revision(), time.Minute)
	if err := env.Delivery.Client.Create(context.Background(), v2); err != nil {
		t.Fatal(err)
	}
	wavePercents(t, 60*time.Second, app, "v2", 1, 0, 0)
	fire(t, "HighErrorRate", app, "v2")
	reason := failedFor(t, v2)
	if !strings.Contains(reason, "HighErrorRate in production (wave east (1/2))") {
		t.Errorf("v2 failed for %q, want the alert and the wave it served in", reason)
	}
	state(t, 30*time.Second, app, "v2", "failed")
	routes(t, app, map[string]int32{"v1": 100})

	// v3 is released in east, and fails as it ramps in west.
	traffic.Set(app, "v3", 5, 0)
	v3 := inWaves(build{app: app, tag: "v3", commit: 3, delay: 2 * time.Second}.revision(), time.Second)
	if err := env.Delivery.Client.Create(context.Background(), v3); err != nil {
		t.Fatal(err)
	}
	wavePercents(t, 60*time.Second, app, "v3", 1, 1, 99)
	fire(t, "HighLatency", app, "v3")
	reason = failedFor(t, v3)
	if !strings.Contains(reason, "HighLatency in production (waves east (1/2), west (2/2))") {
		t.Errorf("v3 failed for %q, want the alert and the waves it served in", reason)
	}
	state(t, 30*time.Second, app, "v3", "failed")
	routes(t, app, map[string]int32{"v1": 100})
}

// clusterLabels gives the targets' Clusters the values of the cluster
// label the traffic counts them by: east for the first, west for the
// second; the test's end takes them off.
func clusterLabels(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i, value := range []string{"east", "west"} {
		key := client.ObjectKeyFromObject(env.Targets[i].Cluster)
		set := func(p *picchuv1alpha1.ClusterPrometheus) {
			cl := &picchuv1alpha1.Cluster{}
			if err := env.Delivery.Client.Get(ctx, key, cl); err != nil {
				t.Fatal(err)
			}
			patch := client.MergeFrom(cl.DeepCopy())
			cl.Spec.Prometheus = p
			if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
				t.Fatal(err)
			}
		}
		set(&picchuv1alpha1.ClusterPrometheus{ClusterLabelValue: value})
		t.Cleanup(func() { set(nil) })
	}
}

// setIn makes app's tag receive requestsPerSecond in each of east and
// west, erring errorRatio of them.
func setIn(app, tag string, requestsPerSecond, errorRatio float64) {
	for _, c := range []string{"east", "west"} {
		traffic.SetIn(c, app, tag, requestsPerSecond, errorRatio)
	}
}

// evidenceHeld waits until the ReleaseManager holds a build for want of
// evidence, its CanaryEvidence message naming each of names, and returns
// the message.
func evidenceHeld(t *testing.T, app string, names ...string) string {
	t.Helper()
	var msg string
	kit.Eventually(t, 60*time.Second, app+" held for want of evidence", func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence)
		if c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("CanaryEvidence %+v", c)
		}
		for _, n := range names {
			if !strings.Contains(c.Message, n) {
				return fmt.Errorf("CanaryEvidence %q does not name %q", c.Message, n)
			}
		}
		msg = c.Message
		return nil
	})
	return msg
}

// TestVerdict_AnAlertNamesItsCluster makes an SLO alert carrying
// cluster="west" fire for a canary: the build fails, its reason names the
// Cluster whose label value is west, and the ReleaseManager records the
// alert on that cluster alone.
func TestVerdict_AnAlertNamesItsCluster(t *testing.T) {
	ctx := context.Background()
	const app = "harbor"
	clusterLabels(t)
	setIn(app, "v1", 50, 0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond, clustered: true})
	state(t, 60*time.Second, app, "v1", "released")

	setIn(app, "v2", 5, 0)
	v2 := create(t, build{app: app, tag: "v2", commit: 2, delay: 300 * time.Millisecond, canary: 2 * time.Minute, clustered: true})
	state(t, 30*time.Second, app, "v2", "canarying")
	rule := sloAlert("HighErrorRate", app, "v2")
	rule.Spec.Groups[0].Rules[0].Labels["cluster"] = "west"
	if err := env.Targets[0].Client.Create(ctx, rule); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Targets[0].Client.Delete(context.Background(), rule) })
	west := env.Targets[1].Name
	reason := failedFor(t, v2)
	if !strings.Contains(reason, "HighErrorRate in production (cluster "+west+")") {
		t.Errorf("v2 failed for %q, want the alert and cluster %s", reason, west)
	}
	st := state(t, 30*time.Second, app, "v2", "failed")
	if got := namedBy(st, "HighErrorRate"); !slices.Equal(got, []string{west}) {
		t.Errorf("failed, v2 records HighErrorRate on clusters %v (record %+v), want %s alone", got, st.Clusters, west)
	}
	routes(t, app, map[string]int32{"v1": 100})
}

// namedBy lists, sorted, the clusters whose entry in a build's record
// holds alert.
func namedBy(st picchuv1alpha1.ReleaseManagerRevisionStatus, alert string) []string {
	var out []string
	for _, c := range st.Clusters {
		if slices.Contains(c.TriggeredAlerts, alert) {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestVerdict_AWaveWithoutRequestsHoldsItsFirstStep releases app "ebb" in
// two waves, east then west, with its SLO counted by cluster: v2 serves
// requests in east only, so its first step in west holds, the
// ReleaseManager naming west and the metric, until requests reach it there.
func TestVerdict_AWaveWithoutRequestsHoldsItsFirstStep(t *testing.T) {
	const app = "ebb"
	regions(t)
	clusterLabels(t)
	setIn(app, "v1", 50, 0)
	v1 := inWaves(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond, clustered: true}.revision(), time.Second)
	if err := env.Delivery.Client.Create(context.Background(), v1); err != nil {
		t.Fatal(err)
	}
	state(t, 60*time.Second, app, "v1", "released")

	traffic.SetIn("east", app, "v2", 5, 0)
	v2 := inWaves(build{app: app, tag: "v2", commit: 2, delay: time.Second, clustered: true}.revision(), time.Second)
	if err := env.Delivery.Client.Create(context.Background(), v2); err != nil {
		t.Fatal(err)
	}
	west := env.Targets[1].Name
	msg := evidenceHeld(t, app, "v2", "wave west (2/2)", app+":availability:total on "+west)
	t.Logf("held: %s", msg)
	// Held at its first step there, for several step delays.
	held := time.Now().Add(4 * time.Second)
	kit.Eventually(t, 20*time.Second, "v2 held at its first step in west", func() error {
		st, err := statusOf(t, app, "v2")
		if err != nil {
			return err
		}
		if st.State.Current != "releasing" || st.Wave != 1 || len(st.WavePercents) != 2 || st.WavePercents[1] != 10 {
			t.Fatalf("v2 %s in wave %d at %v while west saw none of its requests", st.State.Current, st.Wave, st.WavePercents)
		}
		if time.Now().Before(held) {
			return fmt.Errorf("holding")
		}
		return nil
	})
	traffic.SetIn("west", app, "v2", 5, 0)
	state(t, 60*time.Second, app, "v2", "released")
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionCanaryEvidence); c != nil {
		t.Errorf("after requests reached west: %+v", c)
	}
}

// TestVerdict_ACanaryAgainstItsBaseline judges canaries of app "scale"
// against its released build, from its SLO's requests and errors counted
// by cluster in a real Prometheus: at the same error ratio a canary
// passes; at twice its baseline's it fails, with the figures; at ten times
// in west alone it fails, west named an outlier; with 20 requests it holds,
// "too few requests".
func TestVerdict_ACanaryAgainstItsBaseline(t *testing.T) {
	ctx := context.Background()
	const app = "scale"
	clusterLabels(t)
	compared := func(tag string, commit int) build {
		return build{app: app, tag: tag, commit: commit, delay: 300 * time.Millisecond, canary: 5 * time.Second,
			clustered: true, baseline: &picchuv1alpha1.SLIBaseline{}}
	}
	setIn(app, "v1", 500, 0.01)
	create(t, build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond, clustered: true})
	state(t, 60*time.Second, app, "v1", "released")

	// The same error ratio: released.
	setIn(app, "v2", 500, 0.01)
	create(t, compared("v2", 2))
	st := state(t, 60*time.Second, app, "v2", "released")
	if st.Verdict != "" || len(st.TriggeredAlerts) > 0 {
		t.Errorf("v2 released with verdict %q, alerts %v", st.Verdict, st.TriggeredAlerts)
	}
	setIn(app, "v1", 0, 0)

	// Twice the errors: failed, with the figures.
	setIn(app, "v3", 500, 0.02)
	v3 := create(t, compared("v3", 3))
	reason := failedFor(t, v3)
	for _, want := range []string{"availability_baseline in production", "v3 fails availability: 2.0 % errors", "against v2's 1.0 %", "one-sided p"} {
		if !strings.Contains(reason, want) {
			t.Errorf("v3 failed for %q, want %q in it", reason, want)
		}
	}
	// Worse in both clusters, no outlier: both are named.
	both := []string{env.Targets[0].Name, env.Targets[1].Name}
	slices.Sort(both)
	if want := "(clusters " + strings.Join(both, ", ") + ")"; !strings.Contains(reason, want) {
		t.Errorf("v3 failed for %q, want %q in it", reason, want)
	}
	st = state(t, 30*time.Second, app, "v3", "failed")
	if got := namedBy(st, "availability_baseline"); !slices.Equal(got, both) {
		t.Errorf("failed, v3 records availability_baseline on clusters %v (record %+v), want %v", got, st.Clusters, both)
	}
	routes(t, app, map[string]int32{"v2": 100})
	setIn(app, "v3", 0, 0)

	// Ten times the errors in west alone: failed, west an outlier.
	traffic.SetIn("east", app, "v4", 500, 0.01)
	traffic.SetIn("west", app, "v4", 500, 0.1)
	v4 := create(t, compared("v4", 4))
	reason = failedFor(t, v4)
	west := env.Targets[1].Name
	if !strings.Contains(reason, "west is an outlier") || !strings.Contains(reason, "cluster "+west) {
		t.Errorf("v4 failed for %q, want west named an outlier", reason)
	}
	st = state(t, 30*time.Second, app, "v4", "failed")
	if got := namedBy(st, "availability_baseline"); !slices.Equal(got, []string{west}) {
		t.Errorf("failed, v4 records availability_baseline on clusters %v (record %+v), want %s alone", got, st.Clusters, west)
	}
	for _, c := range st.Clusters {
		outlier := strings.HasPrefix(c.Verdict, "outlier")
		if outlier != (c.Name == west) || slices.Contains(c.TriggeredAlerts, "availability_baseline") != (c.Name == west) {
			t.Errorf("cluster %s: verdict %q, alerts %v", c.Name, c.Verdict, c.TriggeredAlerts)
		}
	}
	setIn(app, "v4", 0, 0)

	// 20 requests: held, too few to tell.
	setIn(app, "v5", 1, 0)
	create(t, compared("v5", 5))
	msg := evidenceHeld(t, app, "v5", "too few requests")
	t.Logf("held: %s", msg)
	st = state(t, time.Second, app, "v5", "canarying")
	if !strings.Contains(st.Verdict, "too few requests") {
		t.Errorf("v5 verdict %q, want too few requests", st.Verdict)
	}
	if rev := (&picchuv1alpha1.Revision{}); env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: app + "-v5"}, rev) == nil && rev.Spec.Failed {
		t.Errorf("v5 failed on too few requests: %s", rev.Annotations[picchuv1alpha1.AnnotationFailedReason])
	}
}
