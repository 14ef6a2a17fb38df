package release_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/forecast"
	"github.com/medium/picchu/test/kit"
)

// landed records every step of a build on every cluster as the
// ReleaseManager's status records it (status.revisions[].clusters), until
// the test ends.
type landed struct {
	mu    sync.Mutex
	steps []forecast.Landed
	last  map[string]int32
	// finish is the first status.releasing.forecastFinish of the build.
	finish time.Time
	// deployed is when the build entered the first state past deploying
	// that the status showed.
	deployed time.Time
}

func watchSteps(t *testing.T, app, tag string) *landed {
	l := &landed{last: map[string]int32{}}
	every(t, 20*time.Millisecond, func(ctx context.Context) {
		if rm, err := releaseManager(ctx, app); err == nil {
			l.record(rm, tag)
		}
	})
	return l
}

func (l *landed) record(rm *picchuv1alpha1.ReleaseManager, tag string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if rel := rm.Status.Releasing; rel != nil && rel.Tag == tag && rel.ForecastFinish != nil && l.finish.IsZero() {
		l.finish = rel.ForecastFinish.Time
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag != tag {
			continue
		}
		if l.deployed.IsZero() && st.State.LastUpdated != nil && !slices.Contains(undeployed, st.State.Current) {
			l.deployed = st.State.LastUpdated.Time
		}
		for _, c := range st.Clusters {
			if c.LastUpdated == nil || c.Percent == l.last[c.Name] {
				continue
			}
			l.last[c.Name] = c.Percent
			l.steps = append(l.steps, forecast.Landed{Cluster: c.Name, Step: forecast.Step{Percent: c.Percent, At: c.LastUpdated.Time}})
		}
	}
}

// undeployed are the states of a build not deployed yet.
var undeployed = []string{"", string(release.Created), string(release.Deploying)}

// forecastOf forecasts rev, not applied yet, in its first target, from
// what the delivery API server holds of its app and fleet, as kubectl
// picchu plan -f does.
func forecastOf(t *testing.T, rev *picchuv1alpha1.Revision, now time.Time) forecast.Forecast {
	t.Helper()
	ctx := context.Background()
	c := env.Delivery.Client
	revs := &picchuv1alpha1.RevisionList{}
	clusters := &picchuv1alpha1.ClusterList{}
	if err := c.List(ctx, revs, client.InNamespace(rev.Namespace)); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, clusters, client.InNamespace(rev.Namespace)); err != nil {
		t.Fatal(err)
	}
	rm, err := releaseManager(ctx, rev.Spec.App.Name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := releasemanager.Forecast(releasemanager.ForecastInput{
		ReleaseManager: rm, Revisions: append(revs.Items, *rev), Clusters: clusters.Items, Tag: rev.Spec.App.Tag, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestForecast_EveryStepLandsWhenForecast forecasts v2 of app "augur"
// before applying it: two waves, east then west after a bake of 3 s, from
// 10 % doubling every second. It then applies v2, lets the operator
// release it, and checks every step on every cluster against the forecast:
// the same percents in the same order; the first step never sooner than
// its forecast, and within 1 s of it once the forecast is moved by the time
// v2 took to deploy (the forecast assumes the build deploys at once: under
// the suite's load its pods take seconds); and each next step at its
// forecast distance from the step before it, never sooner and less than
// 1 s later (its lateness). The finish the operator forecast in v2's
// status as its release started is when v2 was released, within 1 s and
// the lateness its steps added.
func TestForecast_EveryStepLandsWhenForecast(t *testing.T) {
	const app = "augur"
	releasedInWaves(t, app)

	traffic.Set(app, "v2", 50, 0)
	v2 := inWaves(build{app: app, tag: "v2", commit: 2, delay: time.Second}.revision(), 3*time.Second)
	made := time.Now()
	f := forecastOf(t, v2, made)
	if f.Outcome != forecast.Released || len(f.Holds) != 1 || f.Holds[0].Cause != forecast.Bake {
		t.Fatalf("forecast of v2: %s (%s), holds %+v; want released after one bake", f.Outcome, f.Why, f.Holds)
	}
	want := f.Steps()
	steps := watchSteps(t, app, "v2")
	if err := env.Delivery.Client.Create(context.Background(), v2); err != nil {
		t.Fatal(err)
	}
	released := state(t, 60*time.Second, app, "v2", "released").State.LastUpdated.Time
	got := func() []forecast.Landed {
		steps.mu.Lock()
		defer steps.mu.Unlock()
		return slices.Clone(steps.steps)
	}
	kit.Eventually(t, 10*time.Second, "every step of v2 seen", func() error {
		if n := len(got()); n < len(want) {
			return fmt.Errorf("%d steps seen of %d", n, len(want))
		}
		return nil
	})
	t.Logf("forecast:\n%slanded:\n%s", formatSteps(want, made), formatSteps(got(), made))
	// The operator's own forecast, made as v2's release started, is in
	// its status: v2 was released no sooner than it, and later by no more
	// than its steps' own lateness (the forecast assumes each run acts at
	// once; the check below bounds each step's), within 1 s, give or take
	// the half second of its rounding to the second the status stores.
	steps.mu.Lock()
	finish, deployed := steps.finish, steps.deployed
	steps.mu.Unlock()
	late := lateness(want, got())
	if off := released.Sub(finish); finish.IsZero() || off < -1500*time.Millisecond || off > late+1500*time.Millisecond {
		t.Errorf("v2 released at %s, status.releasing.forecastFinish was %s; want no sooner, and no later than the steps' lateness %s, within 1s (and the rounding to a second)",
			released, finish, late)
	}
	if deployed.IsZero() {
		t.Fatalf("v2 was never seen past deploying")
	}
	if problems := compareSteps(want, got(), max(deployed.Sub(made), 0)); len(problems) > 0 {
		t.Errorf("v2's release differs from its forecast:\n%s\nforecast:\n%s\nlanded:\n%s",
			strings.Join(problems, "\n"), formatSteps(want, made), formatSteps(got(), made))
	}
}

// lateness is how much longer the steps that landed took, first to last,
// than those forecast: what the runs' own time added to the release.
func lateness(want, got []forecast.Landed) time.Duration {
	if len(want) == 0 || len(got) == 0 {
		return 0
	}
	return max(got[len(got)-1].At.Sub(got[0].At)-want[len(want)-1].At.Sub(want[0].At), 0)
}

// compareSteps says how the steps that landed differ from those forecast,
// the first of which may come later by deploy, the time the build took to
// deploy (forecast to take none).
func compareSteps(want, got []forecast.Landed, deploy time.Duration) []string {
	var problems []string
	if len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d steps landed, %d forecast", len(got), len(want)))
	}
	for i := range min(len(got), len(want)) {
		w, g := want[i], got[i]
		if w.Cluster != g.Cluster || w.Percent != g.Percent {
			problems = append(problems, fmt.Sprintf("step %d: %s at %d %%, forecast %s at %d %%", i, g.Cluster, g.Percent, w.Cluster, w.Percent))
			continue
		}
		if i == 0 {
			if late := g.At.Sub(w.At); late < 0 || late > deploy+time.Second {
				problems = append(problems, fmt.Sprintf("step 0 (%s at %d %%) landed %s after its forecast, want within 1s of the %s v2 took to deploy",
					g.Cluster, g.Percent, late, deploy))
			}
			continue
		}
		gap, wantGap := g.At.Sub(got[i-1].At), w.At.Sub(want[i-1].At)
		if late := gap - wantGap; late < -10*time.Millisecond || late > time.Second {
			problems = append(problems, fmt.Sprintf("step %d (%s at %d %%) landed %s after step %d, forecast %s", i, g.Cluster, g.Percent, gap, i-1, wantGap))
		}
	}
	return problems
}

func formatSteps(steps []forecast.Landed, from time.Time) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "  +%6.3fs %s %d %%\n", s.At.Sub(from).Seconds(), s.Cluster, s.Percent)
	}
	return b.String()
}
