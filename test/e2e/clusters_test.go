package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// routesAlone polls until every one of clusters sends all of app's traffic
// to tag, and says how long that took.
func routesAlone(t *testing.T, timeout time.Duration, app, tag string, clusters ...*fleet.Cluster) time.Duration {
	t.Helper()
	start := time.Now()
	if err := kit.Poll(context.Background(), pollInterval, timeout, fmt.Sprintf("%s: %s alone in %d clusters", app, tag, len(clusters)),
		func(ctx context.Context) error {
			for _, c := range clusters {
				obs := story.ObserveCluster(ctx, c, app)
				if obs.Err != nil {
					return obs.Err
				}
				if obs.Routes() != tag+"=100" {
					return fmt.Errorf("%s routes %q", c.Name, obs.Routes())
				}
			}
			return nil
		}); err != nil {
		t.Fatalf("%v\n%s", err, recordOf(app))
	}
	return time.Since(start)
}

// recordOf says what app's ReleaseManager records: each build's state,
// percent and per-cluster percents, and the conditions.
func recordOf(app string) string {
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		return err.Error()
	}
	var sb strings.Builder
	for _, st := range rm.Status.Revisions {
		fmt.Fprintf(&sb, "%s: %s at %d %%, per cluster %v\n", st.Tag, st.State.Current, st.CurrentPercent, clusterPercents(st))
	}
	for _, c := range rm.Status.Conditions {
		fmt.Fprintf(&sb, "%s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return sb.String()
}

// buildRecord reads what app's ReleaseManager records of build tag.
func buildRecord(ctx context.Context, app, tag string) (picchuv1alpha1.ReleaseManagerRevisionStatus, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
		return picchuv1alpha1.ReleaseManagerRevisionStatus{}, err
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag == tag {
			return st, nil
		}
	}
	return picchuv1alpha1.ReleaseManagerRevisionStatus{}, fmt.Errorf("no record of %s", tag)
}

// clusterPercents are a build's per-cluster percents, by cluster name.
func clusterPercents(st picchuv1alpha1.ReleaseManagerRevisionStatus) map[string]int32 {
	out := map[string]int32{}
	for _, c := range st.Clusters {
		out[c.Name] = c.Percent
	}
	return out
}

// trioFleet registers east, west and a third cluster, north, as fleet
// "trio", and returns the three. Cleanup removes app, then the fleet's
// Clusters, then north.
func trioFleet(t *testing.T, app string) []*fleet.Cluster {
	t.Helper()
	ctx := context.Background()
	north, err := lab.AddTarget(ctx, "north")
	if err != nil {
		t.Fatal(err)
	}
	clusters := []*fleet.Cluster{lab.Target("east"), lab.Target("west"), north}
	t.Cleanup(func() {
		if err := lab.StartCluster(ctx, "north"); err != nil {
			t.Error(err)
		}
		if err := story.Reset(ctx, lab, app); err != nil {
			t.Error(err)
		}
		for _, c := range clusters {
			cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Namespace, Name: c.Name + "-trio"}}
			if err := lab.Delivery.Client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		if err := lab.RemoveTarget(ctx, "north"); err != nil {
			t.Error(err)
		}
	})
	for _, c := range clusters {
		if err := lab.Register(ctx, c, c.Name+"-trio", "trio"); err != nil {
			t.Fatal(err)
		}
	}
	return clusters
}

// TestRollbackWhileATargetIsDown: app "trio" runs in fleet trio (east,
// west and north). v2 is failed at 40 % while north's API server is
// stopped: east and west send its traffic back to v1 within v1's step
// delay + 2 s (v1 ramps back from 60 % in one step, no step of it shorter
// than its delay), and the record says north still has v2's 40 %; once
// north is back it converges within seconds, and v2 is failed.
func TestRollbackWhileATargetIsDown(t *testing.T) {
	ctx := context.Background()
	const app = "trio"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	clusters := trioFleet(t, app)
	east, west, north := clusters[0], clusters[1], clusters[2]
	trio := func(stepDelay time.Duration) func(*picchuv1alpha1.Revision) {
		return func(r *picchuv1alpha1.Revision) {
			tg := &r.Spec.Targets[0]
			tg.Fleet, tg.Canary, tg.ServiceLevelObjectives = "trio", picchuv1alpha1.Canary{}, nil
			tg.Release.GeometricScaling.Delay = &metav1.Duration{Duration: stepDelay}
		}
	}
	v1 := apply(t, app, "v1", trio(5*time.Second))
	until(t, 2*time.Minute, app, "v1 released", func(s story.Snapshot) error {
		if st := s.Build("v1").State; st != "released" {
			return fmt.Errorf("v1 is %q", st)
		}
		return nil
	})
	routesAlone(t, time.Minute, app, "v1", clusters...)

	// v2 starts at 20 % and steps every 12 s: time to stop north at 40 %,
	// before its next step.
	w := watch(app)
	slow := func(r *picchuv1alpha1.Revision) {
		trio(12 * time.Second)(r)
		r.Spec.Targets[0].Release.GeometricScaling.Start = 20
	}
	apply(t, app, "v2", slow)
	until(t, 2*time.Minute, app, "v2 releasing at 40 %", rampingAt("v2", 40))
	if err := lab.StopCluster(ctx, "north"); err != nil {
		t.Fatal(err)
	}
	failedAt := time.Now()
	apply(t, app, "v2", func(r *picchuv1alpha1.Revision) { slow(r); r.Spec.Failed = true })
	routesAlone(t, time.Minute, app, "v1", east, west)
	took := time.Since(failedAt)
	delay := release.StepDelay(v1.Spec.Targets[0].Release)
	t.Logf("v2 failed with north down: east and west route v1 alone %s later", took.Round(time.Millisecond))
	if took > delay+2*time.Second {
		t.Errorf("east and west took %s to route v1 alone, more than v1's step delay %s + 2 s", took, delay)
	}
	// The run that routed v1 alone records it once it has: the status
	// follows the routes, within that run.
	kit.Eventually(t, 10*time.Second, "v2 recorded failing, 0 in east and west, north still at its 40 % or more", func() error {
		v2, err := buildRecord(ctx, app, "v2")
		if err != nil {
			return err
		}
		if got := clusterPercents(v2); v2.State.Current != "failing" || got["east-trio"] != 0 || got["west-trio"] != 0 || got["north-trio"] < 40 {
			return fmt.Errorf("v2 recorded %s, per cluster %v", v2.State.Current, got)
		}
		return nil
	})

	if err := lab.StartCluster(ctx, "north"); err != nil {
		t.Fatal(err)
	}
	back := routesAlone(t, time.Minute, app, "v1", north)
	t.Logf("north back: it routes v1 alone %s later", back.Round(time.Millisecond))
	// Its Cluster is checked every 15 s (--cluster-health-period).
	if limit := 30 * time.Second; back > limit {
		t.Errorf("north took %s to route v1 alone once back, more than %s", back, limit)
	}
	until(t, time.Minute, app, "v2 failed", func(s story.Snapshot) error {
		if st := s.Build("v2").State; st != "failed" {
			return errors.New("v2 is " + st)
		}
		return nil
	})
	noStepShorter(t, "v1", w.finish()["v1"], delay)
}

// stepsWithin fails the test when a step up of what was held longer than
// limit: from one recorded percent to a higher one.
func stepsWithin(t *testing.T, what string, steps []step, limit time.Duration) {
	t.Helper()
	for i := 1; i < len(steps); i++ {
		if steps[i-1].percent == 0 || steps[i].percent < steps[i-1].percent {
			continue
		}
		if held := steps[i].at.Sub(steps[i-1].at); held > limit {
			t.Errorf("%s held %d %% for %s, longer than %s", what, steps[i-1].percent, held, limit)
		}
	}
}

// clusterHealth polls the Cluster name until check passes, and returns it.
func clusterHealth(t *testing.T, timeout time.Duration, name string, check func(*picchuv1alpha1.Cluster) error) *picchuv1alpha1.Cluster {
	t.Helper()
	cl := &picchuv1alpha1.Cluster{}
	if err := kit.Poll(context.Background(), pollInterval, timeout, "cluster "+name, func(ctx context.Context) error {
		if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: name}, cl); err != nil {
			return err
		}
		return check(cl)
	}); err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestHungTargetCostsOthersNothing: fleet limbo is east and west, west
// reached through a proxy that starts to hang (it accepts connections and
// never answers) while app "limbo" ramps v2. Its Cluster shows the breaker
// open with the reason; limbo holds its ramp up with a condition naming
// the cluster, and a v2 failed meanwhile is rolled back in east; app
// "bystander", in fleet production, releases meanwhile with every step
// within 1.05 × its delay + 1 s.
func TestHungTargetCostsOthersNothing(t *testing.T) {
	ctx := context.Background()
	const app, other = "limbo", "bystander"
	east, west := lab.Target("east"), lab.Target("west")
	for _, a := range []string{app, other} {
		if err := story.Reset(ctx, lab, a); err != nil {
			t.Fatal(err)
		}
	}
	proxy, err := fleet.StartProxy(west.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// West through the proxy cannot take limbo's namespace away: the
		// fleet loses it first, and the namespace goes by hand.
		cl := &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Namespace, Name: "west-limbo"}}
		if err := lab.Delivery.Client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
		_ = proxy.Close()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: picchuv1alpha1.AppNamespace(app, story.Target)}}
		if err := west.Client.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
		for _, a := range []string{app, other} {
			if err := story.Reset(ctx, lab, a); err != nil {
				t.Error(err)
			}
		}
		cl = &picchuv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: lab.Namespace, Name: "east-limbo"}}
		if err := lab.Delivery.Client.Delete(ctx, cl); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	if err := lab.Register(ctx, east, "east-limbo", "limbo"); err != nil {
		t.Fatal(err)
	}
	if err := lab.RegisterVia(ctx, west, "west-limbo", "limbo", proxy.URL()); err != nil {
		t.Fatal(err)
	}
	plain := func(fleetName string) func(*picchuv1alpha1.Revision) {
		return func(r *picchuv1alpha1.Revision) {
			tg := &r.Spec.Targets[0]
			tg.Fleet, tg.Canary, tg.ServiceLevelObjectives = fleetName, picchuv1alpha1.Canary{}, nil
		}
	}
	released := func(tag string) func(story.Snapshot) error {
		return func(s story.Snapshot) error {
			if st := s.Build(tag).State; st != "released" {
				return fmt.Errorf("%s is %q", tag, st)
			}
			return nil
		}
	}
	apply(t, app, "v1", plain("limbo"))
	apply(t, other, "v1", plain(lab.Fleet))
	until(t, 2*time.Minute, app, "v1 released", released("v1"))
	routesAlone(t, time.Minute, app, "v1", east, west)
	until(t, 2*time.Minute, other, "v1 released", releasedEverywhere("v1"))

	apply(t, app, "v2", plain("limbo"))
	until(t, 2*time.Minute, app, "v2 releasing", rampingAt("v2", 10))
	proxy.Hang()
	hungAt := story.Observe(ctx, lab, app).Build("v2").Percent
	t.Logf("west-limbo hangs with limbo v2 at %d %%", hungAt)

	w := watch(other)
	rev := apply(t, other, "v2", plain(lab.Fleet))
	delay := release.StepDelay(rev.Spec.Targets[0].Release)

	cl := clusterHealth(t, time.Minute, "west-limbo", func(cl *picchuv1alpha1.Cluster) error {
		if h := cl.Status.Health; h == nil || h.Breaker != "Open" || h.LastError == "" {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})
	stalled := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionStalled)
	t.Logf("west-limbo: breaker %s since %s: %s; Stalled %+v", cl.Status.Health.Breaker, cl.Status.Health.Since, cl.Status.Health.LastError, stalled)
	if stalled == nil || stalled.Reason != "CircuitOpen" {
		t.Errorf("Stalled %+v, want True (CircuitOpen)", stalled)
	}

	until(t, 2*time.Minute, other, "v2 released while west-limbo hangs", releasedEverywhere("v2"))
	steps := w.finish()["v2"]
	noStepShorter(t, other+" v2", steps, delay)
	stepsWithin(t, other+" v2", steps, delay+delay/20+time.Second)

	// Limbo held its ramp up, and says why.
	held := story.Observe(ctx, lab, app).Build("v2")
	if next := release.NextPercent(mustManifest(t, app, "v2").Spec.Targets[0].Release, hungAt); held.State != "releasing" || held.Percent > next {
		t.Errorf("limbo v2 moved on while west-limbo hangs: %s at %d %% (was %d %%)", held.State, held.Percent, hungAt)
	}
	if rec := recordOf(app); !strings.Contains(rec, "west-limbo") {
		t.Errorf("limbo's conditions do not name west-limbo:\n%s", rec)
	}

	// A failed v2 is rolled back in the cluster that answers.
	failedAt := time.Now()
	apply(t, app, "v2", func(r *picchuv1alpha1.Revision) { plain("limbo")(r); r.Spec.Failed = true })
	routesAlone(t, time.Minute, app, "v1", east)
	t.Logf("limbo v2 failed: east routes v1 alone %s later", time.Since(failedAt).Round(time.Millisecond))
}
