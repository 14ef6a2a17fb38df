package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/story"
	"github.com/medium/picchu/test/kit"
)

// checkDashboardFollowed checks that the app page showed the story as it
// happened: v2 releasing at percents between its first and its last, each
// build's states in their order, and v3 failed.
func checkDashboardFollowed(t *testing.T, page *pageFollower) {
	t.Helper()
	// The story ends once v3 failed: the page is told of it a moment later.
	kit.Eventually(t, 30*time.Second, "the dashboard showing v3 failed", func() error {
		if _, states := page.shown(); !slices.Contains(states["v3"], "failed") {
			return fmt.Errorf("v3 shown %q", states["v3"])
		}
		return nil
	})
	releasing, states := page.stop(t)
	t.Logf("the dashboard showed releasing %q; states %v", releasing, states)
	ramped := 0
	for _, r := range releasing {
		if strings.HasPrefix(r, "v2 at ") && r != "v2 at 100%" {
			ramped++
		}
	}
	if ramped < 2 {
		t.Errorf("the dashboard showed v2 releasing at %d percents below 100 (%q), want its ramp", ramped, releasing)
	}
	for tag, want := range map[string][]string{"v1": {"released", "retired"}, "v2": {"releasing", "released"}, "v3": {"failed"}} {
		if got := states[tag]; !inOrder(got, want) {
			t.Errorf("the dashboard showed %s %q, want %q in that order", tag, got, want)
		}
	}
}

// inOrder says whether want are in got, in their order.
func inOrder(got, want []string) bool {
	for _, g := range got {
		if len(want) > 0 && g == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

// testWriter logs what is written to it.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// recorder keeps every observation of a story, by phase.
type recorder struct {
	mu      sync.Mutex
	phases  []string
	byPhase map[string][]story.Snapshot
}

func (r *recorder) observe(phase string, s story.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPhase == nil {
		r.byPhase = map[string][]story.Snapshot{}
	}
	if _, ok := r.byPhase[phase]; !ok {
		r.phases = append(r.phases, phase)
	}
	r.byPhase[phase] = append(r.byPhase[phase], s)
}

func (r *recorder) all() []story.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []story.Snapshot
	for _, p := range r.phases {
		out = append(out, r.byPhase[p]...)
	}
	return out
}

func (r *recorder) phase(name string) []story.Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.byPhase[name])
}

// weightsOf returns the successive weights of tag's release route on a
// cluster, repeated values and the zeros before its first traffic left out.
func weightsOf(snaps []story.Snapshot, cluster, tag string) []int32 {
	var out []int32
	for _, s := range snaps {
		c := s.Cluster(cluster)
		if c.Err != nil {
			continue
		}
		w := c.Weights[tag]
		if len(out) == 0 && w == 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1] != w {
			out = append(out, w)
		}
	}
	return out
}

// TestStory runs the demo's story, routed by the Gateway API (as `make demo
// ROUTER=gatewayAPI` runs it; the other end-to-end tests route through
// Istio), and checks, in both target clusters, the HTTPRoute weights at
// each step, that every build with traffic has Running pods, and that v3
// is rolled back because of its canary alert, fired by the real Prometheus
// from the rules Picchu wrote on the mesh's errors; then every query of
// the Grafana dashboard returns data. Through the three phases (two
// releases, a retirement, a rollback) the mesh sends no request to a build
// without a ready pod.
func TestStory(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "story"
	// Removing an earlier run is no part of the story: done before the
	// mesh's count is read, story.Run finds nothing to remove.
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	checkNoUnready := noRequestsToUnready(t, app)
	rec := &recorder{}
	// The dashboard, as make demo serves it, followed as a browser would.
	dash, err := lab.ServeDashboard(ctx, 0, &testWriter{t: t})
	if err != nil {
		t.Fatal(err)
	}
	page := followPage(t, dash, "apps/"+lab.Namespace+"/"+app)
	res, err := story.Run(ctx, story.Options{Fleet: lab, App: app, Observe: rec.observe, Logf: t.Logf,
		Router: picchuv1alpha1.RouterGatewayAPI})
	if err != nil {
		t.Fatalf("running the story: %v", err)
	}
	checkDashboardFollowed(t, page)
	if err := dash.Stop(); err != nil {
		t.Errorf("the dashboard: %v", err)
	}

	// The time of each phase is within 1.2 × its configured delays plus the
	// time its build took to deploy.
	for _, p := range res.Phases {
		t.Logf("%s: took %s, deploy %s, delays %s (%s), budget %s", p.Name, p.Took(), p.DeployTook(), p.Delays, p.DelaysExplained, p.Budget())
		if !p.Within() {
			t.Errorf("%s took %s, over its budget of %s", p.Name, p.Took(), p.Budget())
		}
	}
	if len(res.Phases) != 3 {
		t.Fatalf("ran %d phases, want 3", len(res.Phases))
	}
	v1, v2, v3 := rec.phase(res.Phases[0].Name), rec.phase(res.Phases[1].Name), rec.phase(res.Phases[2].Name)

	ramp := []int32{10, 20, 40, 80, 100}
	for _, c := range lab.Targets {
		// v1, the app's first build, has all the traffic from the start:
		// there is no other build to take it from.
		if got, want := weightsOf(v1, c.Name, "v1"), []int32{100}; !slices.Equal(got, want) {
			t.Errorf("%s: v1's weights went %v, want %v", c.Name, got, want)
		}
		// v2 canaries at 10 %, and takes every step of its geometric ramp
		// while v1 gives way step by step. Between its canary and its
		// release a build is not routed (docs/releasing.md): the schedule
		// "always" starts the release at once, so its 10 % goes to v1 for
		// at most a moment, which the observations may catch.
		if got := weightsOf(v2, c.Name, "v2"); !slices.Equal(got, ramp) &&
			!slices.Equal(got, append([]int32{10, 0}, ramp...)) {
			t.Errorf("%s: v2's weights went %v, want its canary then %v", c.Name, got, ramp)
		}
		// A build's weights while the next one moves are read on from the
		// phase before: a first observation of the phase may come after
		// the next build's canary began (a canary takes its 10 % within
		// about two seconds of the apply), and it must still show what
		// the weights moved from.
		gaveWay := []int32{90, 80, 60, 20, 0}
		if got := weightsOf(slices.Concat(v1, v2), c.Name, "v1"); !slices.Equal(got, append([]int32{100}, gaveWay...)) &&
			!slices.Equal(got, append([]int32{100, 90, 100}, gaveWay...)) {
			t.Errorf("%s: v1's weights went %v while v2 ramped, want 100 then %v", c.Name, got, gaveWay)
		}
		// v3 takes its 10 % canary, then nothing; v2 gives it those 10 %
		// and takes them back.
		if got, want := weightsOf(v3, c.Name, "v3"), []int32{10, 0}; !slices.Equal(got, want) {
			t.Errorf("%s: v3's weights went %v, want %v", c.Name, got, want)
		}
		if got, want := weightsOf(slices.Concat(v2, v3), c.Name, "v2"), append(weightsOf(v2, c.Name, "v2"), 90, 100); !slices.Equal(got, want) {
			t.Errorf("%s: v2's weights went %v through its ramp and v3's canary, want %v", c.Name, got, want)
		}
	}

	// At every observation, in both clusters: the weights add up to 100
	// once there are any, and every build with traffic has Running pods.
	for _, s := range rec.all() {
		for _, c := range s.Clusters {
			if c.Err != nil || len(c.Weights) == 0 {
				continue
			}
			sum := int32(0)
			for tag, w := range c.Weights {
				sum += w
				if p := c.Pods[tag]; p.Running == 0 {
					t.Errorf("%s at %s: %s has %d %% of the traffic and no Running pod (%d wanted)",
						c.Name, s.At.Format("15:04:05.000"), tag, w, p.Desired)
				}
			}
			if sum != 100 {
				t.Errorf("%s at %s: weights %q add up to %d", c.Name, s.At.Format("15:04:05.000"), c.Routes(), sum)
			}
		}
	}

	// v3 was failed because of its canary alert, which fired in Prometheus.
	b := res.Final.Build("v3")
	if !b.Failed || !strings.Contains(b.FailedReason, "availability_canary") {
		t.Errorf("v3: failed=%v reason %q, want failed by availability_canary", b.Failed, b.FailedReason)
	}
	fired, err := promQuery(ctx, `max_over_time(ALERTS{alertname="availability_canary",alertstate="firing",app="`+app+`",tag="v3"}[15m])`)
	if err != nil {
		t.Fatal(err)
	}
	if fired == 0 {
		t.Errorf("Prometheus never fired availability_canary for %s v3", app)
	}
	for _, tag := range []string{"v1", "v2"} {
		if n, err := promQuery(ctx, `max_over_time(ALERTS{alertname="availability_canary",app="`+app+`",tag="`+tag+`"}[15m])`); err != nil || n > 0 {
			t.Errorf("availability_canary was pending or firing for healthy %s: %d series, %v", tag, n, err)
		}
	}
	// Final state: v2 serves everything everywhere; v1 retired, v3 failed.
	for _, c := range res.Final.Clusters {
		if c.Routes() != "v2=100" {
			t.Errorf("%s ends routing %q, want v2=100", c.Name, c.Routes())
		}
	}
	if st := res.Final.Build("v1").State; st != "retired" {
		t.Errorf("v1 ends %q, want retired", st)
	}
	checkNoUnready()
	// The Grafana dashboard shows the story: every panel has data.
	checkDashboard(t, app)
}
