package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
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

// sloAlert is a PrometheusRule on the first target, which the test's
// Prometheus evaluates, whose SLO alert for app's tag fires at once.
func sloAlert(name, app, tag string) *monitoringv1.PrometheusRule {
	now := monitoringv1.Duration("0s")
	return &monitoringv1.PrometheusRule{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceDefault, Name: strings.ToLower(app + "-" + tag + "-" + name)},
		Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "slo", Rules: []monitoringv1.Rule{{
			Alert: name, Expr: intstr.FromString("vector(1)"), For: &now,
			Labels: map[string]string{"slo": "true", "app": app, "tag": tag},
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
	regions(t)
	traffic.Set(app, "v1", 50, 0)
	v1 := inWaves(build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}.revision(), time.Second)
	if err := env.Delivery.Client.Create(context.Background(), v1); err != nil {
		t.Fatal(err)
	}
	state(t, 60*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})

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
