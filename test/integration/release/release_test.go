package release_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/kit"
)

// build describes a Revision of an app for these tests.
type build struct {
	app, tag string
	// commit orders builds: the n-th commit of the day.
	commit int
	// delay is the ramp's step delay.
	delay time.Duration
	// canary, when set, canaries at 10 % for this long.
	canary time.Duration
	// notEligible builds deploy but never take traffic; ttl retires them.
	notEligible bool
	ttl         int64
	// neverExpires gives the build ttl 0 (ttl 0 above means a day).
	neverExpires bool
	// datadog judges the build by Datadog monitors instead of Prometheus.
	datadog bool
	// hpa scales the build with an HPA between 4 and 12 replicas (no default).
	hpa bool
	// clustered records the SLO's series by cluster: the label cluster
	// holds Istio's destination_cluster.
	clustered bool
	// baseline compares the canary with its baseline on the SLO.
	baseline *picchuv1alpha1.SLIBaseline
	// router routes the target (istio when empty).
	router picchuv1alpha1.Router
	// drain, when set, is its release.scaleDownDelay (the operator's, 30 s,
	// otherwise).
	drain time.Duration
}

// revision is a realistic Revision: a public HTTP port, two replicas over
// the fleet, a geometric ramp from 10 % doubling every delay, the schedule
// "always", and an availability SLO on Istio's request counters whose
// canary check fails a build erring 1 point more than the app for 1 s.
func (b build) revision() *picchuv1alpha1.Revision {
	ttl := b.ttl
	if ttl == 0 && !b.neverExpires {
		ttl = 86400
	}
	rev := env.Apps().Revision(b.app, b.tag, kit.Commit(b.commit), kit.Geometric(10, 2, b.delay),
		kit.Target(func(t *picchuv1alpha1.RevisionTarget) {
			t.Release.Eligible, t.Release.TTL = !b.notEligible, ttl
			t.ServiceLevelObjectives = []picchuv1alpha1.ServiceLevelObjective{{
				Name: "availability", Enabled: true, ObjectivePercentString: "99.9",
				Description: "requests to " + b.app + " succeed",
				ServiceLevelIndicator: picchuv1alpha1.ServiceLevelIndicator{
					// Istio's request counters, which traffic serves;
					// the tag is Istio's destination_version.
					TagKey:     "destination_version",
					TotalQuery: fmt.Sprintf(`sum by (destination_version) (istio_requests_total{reporter="destination",destination_app=%q})`, b.app),
					ErrorQuery: fmt.Sprintf(`sum by (destination_version) (istio_requests_total{reporter="destination",destination_app=%q,response_code=~"5.."})`, b.app),
					Canary:     picchuv1alpha1.SLICanaryConfig{Enabled: true, AllowancePercentString: "1", FailAfter: "1s"},
				},
			}}
		}))
	if b.clustered {
		sli := &rev.Spec.Targets[0].ServiceLevelObjectives[0].ServiceLevelIndicator
		byCluster := func(selector string) string {
			return fmt.Sprintf(`sum by (destination_version, cluster) (label_replace(istio_requests_total{%s}, "cluster", "$1", "destination_cluster", "(.*)"))`, selector)
		}
		sli.TotalQuery = byCluster(fmt.Sprintf(`reporter="destination",destination_app=%q`, b.app))
		sli.ErrorQuery = byCluster(fmt.Sprintf(`reporter="destination",destination_app=%q,response_code=~"5.."`, b.app))
	}
	if b.baseline != nil {
		// Judged by its baseline alone: no canary alert.
		canary := &rev.Spec.Targets[0].ServiceLevelObjectives[0].ServiceLevelIndicator.Canary
		canary.Enabled, canary.Baseline = false, b.baseline
	}
	rev.Spec.Targets[0].DatadogMonitoring.Enabled = b.datadog
	rev.Spec.Targets[0].Router = b.router
	if b.hpa {
		four, cpu := int32(4), int32(70)
		rev.Spec.Targets[0].Scale = picchuv1alpha1.ScaleInfo{Min: &four, Max: 12, TargetCPUUtilizationPercentage: &cpu}
	}
	if b.canary > 0 {
		rev.Spec.Targets[0].Canary = picchuv1alpha1.Canary{Percent: 10, TTL: int64(b.canary / time.Second)}
	}
	if b.drain > 0 {
		rev.Spec.Targets[0].Release.ScaleDownDelay = &metav1.Duration{Duration: b.drain}
	}
	return rev
}

func create(t testing.TB, b build) *picchuv1alpha1.Revision {
	t.Helper()
	rev := b.revision()
	if err := env.Delivery.Client.Create(context.Background(), rev); err != nil {
		t.Fatalf("creating %s: %v", rev.Name, err)
	}
	return rev
}

// state waits until app's build tag is in state, and returns its status.
func state(t testing.TB, timeout time.Duration, app, tag, want string) picchuv1alpha1.ReleaseManagerRevisionStatus {
	t.Helper()
	_, st := env.Apps().WaitState(t, timeout, app, tag, want)
	return st
}

// percentAtLeast waits until app's build tag takes at least p percent.
func percentAtLeast(t *testing.T, app, tag string, p int32) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("%s %s at %d%%", app, tag, p), func() error {
		rm, err := releaseManager(context.Background(), app)
		if err != nil {
			return err
		}
		for _, st := range rm.Status.Revisions {
			if st.Tag == tag && st.CurrentPercent >= p {
				return nil
			}
		}
		return fmt.Errorf("not yet: %+v", rm.Status.Releasing)
	})
}

// routes waits until app's release route has these weights on every target.
func routes(t *testing.T, app string, want map[string]int32) {
	t.Helper()
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, target.Name+" routes of "+app, func() error {
			got, err := routeWeights(context.Background(), target, app)
			if err != nil {
				return err
			}
			if got != formatWeights(want) {
				return fmt.Errorf("weights %q, want %q", got, formatWeights(want))
			}
			return nil
		})
	}
}

// replicas waits until app's build tag has n replicas on every target.
func replicas(t *testing.T, app, tag string, n int32) {
	t.Helper()
	for _, target := range env.Targets {
		kit.Eventually(t, 10*time.Second, fmt.Sprintf("%s: %s %s has %d replicas", target.Name, app, tag, n), func() error {
			rs := &appsv1.ReplicaSet{}
			if err := target.Client.Get(context.Background(), client.ObjectKey{Namespace: app + "-production", Name: tag}, rs); err != nil {
				return err
			}
			if rs.Spec.Replicas == nil || *rs.Spec.Replicas != n {
				return fmt.Errorf("replicas %v", rs.Spec.Replicas)
			}
			return nil
		})
	}
}

// fail sets spec.failed on a Revision, as a person or CI would.
func fail(t *testing.T, rev *picchuv1alpha1.Revision) {
	t.Helper()
	ctx := context.Background()
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rev), rev); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(rev.DeepCopy())
	rev.Spec.Failed = true
	if err := env.Delivery.Client.Patch(ctx, rev, patch); err != nil {
		t.Fatalf("failing %s: %v", rev.Name, err)
	}
}

// gauge is the value of a gauge for app and tag, and whether it exists.
func gauge(t *testing.T, name, app, tag string) (float64, bool) {
	t.Helper()
	return gaugeOf(t, name, map[string]string{"app": app, "tag": tag})
}

// gaugeOf is the value of the gauge name's series whose labels include
// want, and whether there is one.
func gaugeOf(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			matches := true
			for k, v := range want {
				matches = matches && labels[k] == v
			}
			if matches {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// histogramCount is the number of observations of a histogram for app.
func histogramCount(t *testing.T, name, app string) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "app" && l.GetValue() == app {
					n += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return n
}

// TestRelease_CanaryRampRetireFailAndRecommission is the release story of
// one app in two clusters: v1 to 100 %; v2 canaried, then ramped step by
// step while v1 retires; v3 failed mid-ramp and rolled back to v2; v2
// failed in turn, and v1, the newest retired good build, recommissioned.
func TestRelease_CanaryRampRetireFailAndRecommission(t *testing.T) {
	const app = "story"
	const delay = time.Second
	const canary = 2 * time.Second
	// Through the whole story, no route ever sends to a subset its
	// DestinationRule lacks.
	ctx, stop := context.WithCancel(context.Background())
	subsets := watchSubsets(ctx, t, app)
	defer func() { stop(); subsets.check(t) }()

	create(t, build{app: app, tag: "v1", commit: 1, delay: delay})
	state(t, 30*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})

	// v2: a canary at 10 % for 2 s, then 10, 20, 40, 80, 100 % a second apart.
	tl := watch(t, app, "v2")
	lateSteps := stepsTimed(t)
	// A canary passes only once requests reached it.
	traffic.Set(app, "v2", 5, 0)
	v2 := create(t, build{app: app, tag: "v2", commit: 2, delay: delay, canary: canary})
	state(t, 30*time.Second, app, "v2", "released")
	// The four steps that waited out a delay (20, 40, 80, 100 %) had their
	// lateness observed.
	if n := stepsTimed(t) - lateSteps; n < 4 {
		t.Errorf("%d ramp steps' lateness observed, want at least 4", n)
	}
	state(t, 10*time.Second, app, "v1", "retired")
	routes(t, app, map[string]int32{"v2": 100})
	replicas(t, app, "v1", 0)
	replicas(t, app, "v2", 1)

	// Each cluster's routes went through every step, in order.
	ramp := []string{"v1=90 v2=10", "v1=80 v2=20", "v1=60 v2=40", "v1=20 v2=80", "v2=100"}
	withBreak := append([]string{"v1=100", "v1=90 v2=10", "v1=100"}, ramp...)
	without := append([]string{"v1=100"}, ramp...)
	for _, target := range env.Targets {
		got := tl.routesOf(target.Name)
		if !slices.Equal(got, withBreak) && !slices.Equal(got, without) {
			t.Errorf("%s: routes went through %q, want %q (the canary's end may pass between two looks)", target.Name, got, withBreak)
		}
	}
	// The canary lasted its ttl, and every step its delay (status stamps).
	start := state(t, time.Second, app, "v2", "released").CanaryStartTimestamp
	// Its canary over, it passes on to its release in the same run: the
	// canary ended when it entered releasing (or canaried, when something
	// held it there).
	ended := tl.entered("canaried")
	if ended.IsZero() {
		ended = tl.entered("releasing")
	}
	if start == nil || ended.Sub(start.Time) < canary {
		t.Errorf("canary from %v to %v: shorter than %v", start, ended, canary)
	}
	kit.CheckSteps(t, tl.stepsOf(), tl.entered("releasing"), []string{"10", "20", "40", "80", "100"}, delay)
	for tag, want := range map[string]float64{"v1": 0, "v2": 100} {
		if got, ok := gauge(t, "picchu_revision_release_weight", app, tag); !ok || got != want {
			t.Errorf("picchu_revision_release_weight{app=%q,tag=%q} = %v (exists: %v), want %v", app, tag, got, ok, want)
		}
	}
	// The oldest build of each state is named, as the original named it.
	kit.Eventually(t, 10*time.Second, "the oldest ages name v2 released and v1 retired", func() error {
		for state, tag := range map[string]string{"released": "v2", "retired": "v1"} {
			if age, ok := gaugeOf(t, "picchu_revision_oldest_age_seconds", map[string]string{"app": app, "state": state, "revision": tag}); !ok || age <= 0 {
				return fmt.Errorf("picchu_revision_oldest_age_seconds{app=%q,state=%q,revision=%q} = %v (exists: %v)", app, state, tag, age, ok)
			}
		}
		return nil
	})
	if n := histogramCount(t, "picchu_release_latency", app); n != 2 {
		t.Errorf("picchu_release_latency has %d observations for %s, want 2 (v1 and v2)", n, app)
	}

	// v3 fails mid-ramp: its traffic goes back to v2 in both clusters.
	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: delay})
	percentAtLeast(t, app, "v3", 20)
	fail(t, v3)
	state(t, 10*time.Second, app, "v3", "failed")
	routes(t, app, map[string]int32{"v2": 100})
	replicas(t, app, "v3", 0)
	if st := state(t, time.Second, app, "v2", "released"); st.CurrentPercent != 100 {
		t.Errorf("v2 takes %d%% after the rollback", st.CurrentPercent)
	}
	if n := histogramCount(t, "picchu_revision_rollback_latency", app); n != 1 {
		t.Errorf("picchu_revision_rollback_latency has %d observations for %s, want 1", n, app)
	}

	// v2 fails too: nothing healthy is left, so v1 comes back.
	fail(t, v2)
	state(t, 30*time.Second, app, "v1", "released")
	state(t, 30*time.Second, app, "v2", "failed")
	routes(t, app, map[string]int32{"v1": 100})
	replicas(t, app, "v1", 1)
	replicas(t, app, "v2", 0)
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag == "v1" && (!st.ReleaseEligible || st.PeakPercent != 100) {
			t.Errorf("recommissioned v1: %+v", st)
		}
	}
}

// stepsTimed is how many ramp steps in target production have had their
// lateness observed (picchu_release_step_lateness_seconds).
func stepsTimed(t *testing.T) uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "picchu_release_step_lateness_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == "production" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// revisionDeleted waits until rev is gone from the delivery cluster.
func revisionDeleted(t *testing.T, rev *picchuv1alpha1.Revision) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, rev.Name+" deleted", func() error {
		err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(rev), &picchuv1alpha1.Revision{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// recordedTags are the tags app's ReleaseManager records, in its order.
func recordedTags(ctx context.Context, app string) ([]string, error) {
	rm, err := releaseManager(ctx, app)
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, st := range rm.Status.Revisions {
		tags = append(tags, st.Tag)
	}
	return tags, nil
}

// TestRelease_GarbageCollectionBoundsBuildsThatNeverExpire fails builds with
// ttl 0, which never expire, under an operator that keeps two done builds
// per target: the older failed builds' Revisions go all the same, and the
// ReleaseManager forgets them.
func TestRelease_GarbageCollectionBoundsBuildsThatNeverExpire(t *testing.T) {
	running.Restart(t, func(o *operator.Options) { o.KeepDone = 2 })
	defer running.Restart(t)
	const app = "gc-forever"
	ctx := context.Background()
	create(t, build{app: app, tag: "v1", commit: 1, delay: time.Second, neverExpires: true})
	state(t, 30*time.Second, app, "v1", "released")
	var revs []*picchuv1alpha1.Revision
	for i := 2; i <= 5; i++ {
		rev := create(t, build{app: app, tag: fmt.Sprintf("v%d", i), commit: i, delay: time.Second, neverExpires: true})
		fail(t, rev)
		state(t, 30*time.Second, app, rev.Spec.App.Tag, "failed")
		revs = append(revs, rev)
	}
	for _, rev := range revs[:2] {
		revisionDeleted(t, rev)
	}
	kit.Eventually(t, 30*time.Second, "v2 and v3 forgotten", func() error {
		tags, err := recordedTags(ctx, app)
		if err != nil {
			return err
		}
		if slices.Sort(tags); !slices.Equal(tags, []string{"v1", "v4", "v5"}) {
			return fmt.Errorf("status holds %v", tags)
		}
		return nil
	})
	state(t, time.Second, app, "v1", "released")
}

// TestRelease_GarbageCollection keeps the newest three retired builds and
// deletes the Revisions of older ones.
func TestRelease_GarbageCollection(t *testing.T) {
	const app = "gc"
	var revs []*picchuv1alpha1.Revision
	for i := 1; i <= 5; i++ {
		// Never eligible, with a TTL of a second: each deploys, then retires.
		revs = append(revs, create(t, build{app: app, tag: fmt.Sprintf("v%d", i), commit: i, delay: time.Second, notEligible: true, ttl: 1}))
	}
	create(t, build{app: app, tag: "v6", commit: 6, delay: time.Second})
	state(t, 30*time.Second, app, "v6", "released")
	ctx := context.Background()
	for _, rev := range revs[:2] {
		revisionDeleted(t, rev)
	}
	for _, tag := range []string{"v3", "v4", "v5"} {
		state(t, 30*time.Second, app, tag, "retired")
	}
	for _, rev := range revs[2:] {
		got := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rev), got); err != nil {
			t.Errorf("%s: %v", rev.Name, err)
		} else if _, ok := got.Labels[picchuv1alpha1.LabelTargetDeletablePrefix+"production"]; ok {
			t.Errorf("%s is marked deletable", rev.Name)
		}
	}
	kit.Eventually(t, 30*time.Second, "v1 and v2 forgotten", func() error {
		tags, err := recordedTags(ctx, app)
		if err != nil {
			return err
		}
		if !slices.Equal(tags, []string{"v6", "v5", "v4", "v3"}) {
			return fmt.Errorf("status holds %v", tags)
		}
		return nil
	})
}
