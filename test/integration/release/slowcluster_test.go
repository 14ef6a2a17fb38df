package release_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/integration/harness"
)

// weighted is a build's weight in a cluster's release route, from when the
// cluster's API server showed it.
type weighted struct {
	at     time.Time
	weight int32
}

// watchWeight records each weight tag's release route takes on target's
// VirtualService of app, as its API server sends them (not through the
// operator's proxy), and calls seen with each.
func watchWeight(ctx context.Context, t *testing.T, target *harness.Target, app, tag string, seen func(int32)) func() []weighted {
	t.Helper()
	w, err := client.NewWithWatch(target.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := w.Watch(ctx, &istionetworking.VirtualServiceList{}, client.InNamespace(app+"-production"),
		client.MatchingFields{"metadata.name": app})
	if err != nil {
		t.Fatalf("%s: watching the routes of %s: %v", target.Name, app, err)
	}
	var (
		mu  sync.Mutex
		out []weighted
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range watch.ResultChan() {
			vs, ok := e.Object.(*istionetworking.VirtualService)
			if !ok {
				continue
			}
			at := time.Now()
			var weight int32
			for _, route := range vs.Spec.Http {
				for _, d := range route.Route {
					if route.Name == "01_release-http" && d.Destination.Subset == tag {
						weight = d.Weight
					}
				}
			}
			mu.Lock()
			if len(out) == 0 || out[len(out)-1].weight != weight {
				out = append(out, weighted{at: at, weight: weight})
				seen(weight)
			}
			mu.Unlock()
		}
	}()
	return func() []weighted {
		watch.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// TestRelease_EveryStepHeldItsDelayOnASlowCluster: a ramp step counts from
// when the last cluster took its weights, not from when its run started.
// target-1's API server gets the operator's requests 700 ms late while v2's
// 20 % step is written there, and on time again for the next: every step
// of v2 is still held at least its delay on both clusters, as their routes
// show. (Counted from the run's start, the 20 % step was held 0.3 s on
// target-1: its next step was due 1 s after a run whose write landed
// 0.7 s in.)
func TestRelease_EveryStepHeldItsDelayOnASlowCluster(t *testing.T) {
	const app = "slowcluster"
	const delay = time.Second
	// The watch's two deliveries may reach the test a little apart from
	// the writes they show.
	const tolerance = 100 * time.Millisecond
	slow := env.Targets[1]
	defer slow.Proxy.SetLag(0)
	create(t, build{app: app, tag: "v1", commit: 1, delay: delay})
	state(t, 30*time.Second, app, "v1", "released")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	finish := map[string]func() []weighted{}
	for _, target := range env.Targets {
		seen := func(int32) {}
		if target == slow {
			seen = func(w int32) {
				switch w {
				case 10:
					slow.Proxy.SetLag(700 * time.Millisecond)
				case 20:
					slow.Proxy.SetLag(0)
				}
			}
		}
		finish[target.Name] = watchWeight(ctx, t, target, app, "v2", seen)
	}
	create(t, build{app: app, tag: "v2", commit: 2, delay: delay})
	state(t, 30*time.Second, app, "v2", "released")
	routes(t, app, map[string]int32{"v2": 100})

	for _, target := range env.Targets {
		steps := finish[target.Name]()
		var ramp []int32
		for i, s := range steps {
			ramp = append(ramp, s.weight)
			if i == 0 || steps[i-1].weight == 0 {
				continue // the first step comes at once
			}
			if held := s.at.Sub(steps[i-1].at); held < delay-tolerance {
				t.Errorf("%s held v2 at %d %% for %s, shorter than its delay %s", target.Name, steps[i-1].weight, held, delay)
			}
		}
		if want := fmt.Sprint([]int32{0, 10, 20, 40, 80, 100}); fmt.Sprint(ramp) != want {
			t.Errorf("%s routed v2 at %v, want %s", target.Name, ramp, want)
		}
	}
}
