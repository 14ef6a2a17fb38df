package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

const pollInterval = 200 * time.Millisecond

// apply applies the sample build tag of app, changed by edit if not nil.
func apply(t *testing.T, app, tag string, edit func(*picchuv1alpha1.Revision)) *picchuv1alpha1.Revision {
	t.Helper()
	rev, err := story.Manifest(story.SamplesDir(), app, tag)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(rev)
	}
	if err := kit.Apply(context.Background(), lab.Delivery.Client, rev); err != nil {
		t.Fatal(err)
	}
	return rev
}

// until polls the fleet's view of app until check passes.
func until(t *testing.T, timeout time.Duration, app, what string, check func(story.Snapshot) error) story.Snapshot {
	t.Helper()
	var s story.Snapshot
	if err := kit.Poll(context.Background(), pollInterval, timeout, app+": "+what, func(ctx context.Context) error {
		s = story.Observe(ctx, lab, app)
		return check(s)
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// releasedEverywhere checks that tag is released with all the traffic of
// every cluster in clusters (all targets when empty).
func releasedEverywhere(tag string, clusters ...string) func(story.Snapshot) error {
	return func(s story.Snapshot) error {
		if st := s.Build(tag).State; st != "released" {
			return fmt.Errorf("%s is %q", tag, st)
		}
		for _, c := range s.Clusters {
			if len(clusters) > 0 && !slices.Contains(clusters, c.Name) {
				continue
			}
			if c.Err != nil {
				return c.Err
			}
			if c.Routes() != tag+"=100" {
				return fmt.Errorf("%s routes %q", c.Name, c.Routes())
			}
			if p := c.Pods[tag]; p.Desired == 0 || p.Running < p.Desired {
				return fmt.Errorf("%s: %s has %d of %d pods Running", c.Name, tag, p.Running, p.Desired)
			}
		}
		return nil
	}
}

// watcher records, until stopped, the percent steps of each build of an
// app as its ReleaseManager records them: the percent and when the engine
// decided it (the build's lastUpdated).
type watcher struct {
	mu    sync.Mutex
	steps map[string][]step
	stop  context.CancelFunc
	done  chan struct{}
}

type step struct {
	percent int32
	at      time.Time
}

func watch(app string) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{steps: map[string][]step{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		_ = wait.PollUntilContextCancel(ctx, pollInterval/4, true, func(ctx context.Context) (bool, error) {
			rm := &picchuv1alpha1.ReleaseManager{}
			if err := lab.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm); err != nil {
				return false, nil
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, st := range rm.Status.Revisions {
				if st.LastUpdated == nil {
					continue
				}
				steps := w.steps[st.Tag]
				if n := len(steps); n == 0 || steps[n-1].percent != st.CurrentPercent {
					w.steps[st.Tag] = append(steps, step{st.CurrentPercent, st.LastUpdated.Time})
				}
			}
			return false, nil
		})
	}()
	return w
}

// noStepShorter fails the test when a step up of what (a build) was held
// shorter than delay: from one recorded percent to a higher one.
func noStepShorter(t *testing.T, what string, steps []step, delay time.Duration) {
	t.Helper()
	for i := 1; i < len(steps); i++ {
		if steps[i-1].percent == 0 || steps[i].percent < steps[i-1].percent {
			continue
		}
		if held := steps[i].at.Sub(steps[i-1].at); held < delay {
			t.Errorf("%s held %d %% for %s, shorter than the step delay %s", what, steps[i-1].percent, held, delay)
		}
	}
}

// rampingAt checks that tag is releasing with at least percent of the traffic.
func rampingAt(tag string, percent int32) func(story.Snapshot) error {
	return func(s story.Snapshot) error {
		if b := s.Build(tag); b.State != "releasing" || b.Percent < percent {
			return fmt.Errorf("%s %s at %d %%", tag, b.State, b.Percent)
		}
		return nil
	}
}

func (w *watcher) finish() map[string][]step {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps
}

// TestOperatorRestartMidRamp kills the operator (SIGKILL) while v2 ramps
// and starts it again: the release completes, and no step of the ramp is
// held shorter than the configured delay, as recorded by the engine, which
// routes each step as soon as it records it. (The restarted operator could
// only shorten a step by losing when the last one was taken.)
func TestOperatorRestartMidRamp(t *testing.T) {
	const app = "restart"
	if err := story.Reset(context.Background(), lab, app); err != nil {
		t.Fatal(err)
	}
	apply(t, app, "v1", nil)
	until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))

	w := watch(app)
	rev := apply(t, app, "v2", nil)
	delay := release.StepDelay(rev.Spec.Targets[0].Release)
	until(t, 2*time.Minute, app, "v2 releasing at 20 %", rampingAt("v2", 20))
	if err := lab.KillOperator(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := lab.StartOperator(context.Background(), operatorBinary); err != nil {
		t.Fatal(err)
	}
	t.Logf("operator killed and back in %s", time.Since(killed).Round(time.Millisecond))
	until(t, 2*time.Minute, app, "v2 released", releasedEverywhere("v2"))
	steps := w.finish()["v2"]
	noStepShorter(t, "v2", steps, delay)
	var ramp []int32
	for _, s := range steps {
		ramp = append(ramp, s.percent)
	}
	t.Logf("v2's recorded percents: %v", ramp)
	if ramp[len(ramp)-1] != 100 {
		t.Errorf("v2 ended at %d %%", ramp[len(ramp)-1])
	}
}

// TestTargetDownMidRelease stops every process of the east cluster, its
// API server included, while app "outage" ramps in fleet production (east
// and west). Meanwhile app "solo", in fleet staging (west only), releases a
// new build to the end. Outage's release holds and completes once east is
// back.
func TestTargetDownMidRelease(t *testing.T) {
	ctx := context.Background()
	const app, solo = "outage", "solo"
	west := lab.Target("west")
	if err := lab.Register(ctx, west, "west-staging", "staging"); err != nil {
		t.Fatal(err)
	}
	// Solo has no canary and steps every second: what it shows is that it
	// is released at all while east is down, not its pace.
	staging := func(r *picchuv1alpha1.Revision) {
		tg := &r.Spec.Targets[0]
		tg.Fleet, tg.Canary, tg.ServiceLevelObjectives = "staging", picchuv1alpha1.Canary{}, nil
		tg.Release.GeometricScaling.Delay = &metav1.Duration{Duration: time.Second}
	}
	for _, a := range []string{app, solo} {
		if err := story.Reset(ctx, lab, a); err != nil {
			t.Fatal(err)
		}
	}
	apply(t, app, "v1", nil)
	apply(t, solo, "v1", staging)
	until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))
	until(t, 2*time.Minute, solo, "v1 released", releasedEverywhere("v1", "west"))

	apply(t, app, "v2", nil)
	until(t, 2*time.Minute, app, "v2 releasing at 20 %", rampingAt("v2", 20))
	if err := lab.StopCluster(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	stopped := story.Observe(ctx, lab, app).Build("v2").Percent
	t.Logf("east stopped with outage v2 at %d %%", stopped)
	restarted := false
	defer func() {
		if !restarted {
			if err := lab.StartCluster(ctx, "east"); err != nil {
				t.Error(err)
			}
		}
	}()

	// Solo, whose fleet does not include east, releases v2 to the end.
	apply(t, solo, "v2", staging)
	until(t, 2*time.Minute, solo, "v2 released with east down", releasedEverywhere("v2", "west"))

	// Outage held: at most the step that was under way when east went
	// down, and not released.
	held := story.Observe(ctx, lab, app)
	if b := held.Build("v2"); b.State == "released" || b.Percent > release.NextPercent(mustManifest(t, app, "v2").Spec.Targets[0].Release, stopped) {
		t.Errorf("outage v2 moved on with east down: %s at %d %% (was %d %%)", b.State, b.Percent, stopped)
	}
	t.Logf("while east was down outage v2 held at %d %%; west routes %q", held.Build("v2").Percent, held.Cluster("west").Routes())

	if err := lab.StartCluster(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	restarted = true
	until(t, 3*time.Minute, app, "v2 released once east is back", releasedEverywhere("v2"))
}

func mustManifest(t *testing.T, app, tag string) *picchuv1alpha1.Revision {
	t.Helper()
	rev, err := story.Manifest(story.SamplesDir(), app, tag)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}
