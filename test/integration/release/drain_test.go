package release_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/integration/harness"
)

// drainWatch watches, on one target, when the app's VirtualService stops
// routing a build and when the build's ReplicaSet is scaled to nothing,
// each as the watch first delivers it.
type drainWatch struct {
	target string
	mu     sync.Mutex
	// unrouted and scaledDown are by tag; routed says the build had a route.
	routed               map[string]bool
	unrouted, scaledDown map[string]time.Time
}

func watchDrains(ctx context.Context, t *testing.T, target *harness.Target, app string) *drainWatch {
	t.Helper()
	d := &drainWatch{target: target.Name, routed: map[string]bool{}, unrouted: map[string]time.Time{}, scaledDown: map[string]time.Time{}}
	c, err := client.NewWithWatch(target.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := client.InNamespace(app + "-production")
	vsWatch, err := c.Watch(ctx, &istionetworking.VirtualServiceList{}, ns)
	if err != nil {
		t.Fatal(err)
	}
	rsWatch, err := c.Watch(ctx, &appsv1.ReplicaSetList{}, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vsWatch.Stop)
	t.Cleanup(rsWatch.Stop)
	go d.follow(vsWatch, func(obj any, at time.Time) {
		vs, ok := obj.(*istionetworking.VirtualService)
		if !ok || vs.Name != app {
			return
		}
		weights := map[string]int32{}
		for _, route := range vs.Spec.Http {
			if route.Name == "01_release-http" {
				for _, dest := range route.Route {
					weights[dest.Destination.Subset] += dest.Weight
				}
			}
		}
		for tag := range d.routed {
			if _, gone := d.unrouted[tag]; !gone && weights[tag] == 0 {
				d.unrouted[tag] = at
			}
		}
		for tag, w := range weights {
			if w > 0 {
				d.routed[tag] = true
				delete(d.unrouted, tag)
			}
		}
	})
	go d.follow(rsWatch, func(obj any, at time.Time) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok || rs.Spec.Replicas == nil {
			return
		}
		if _, seen := d.scaledDown[rs.Name]; !seen && *rs.Spec.Replicas == 0 {
			d.scaledDown[rs.Name] = at
		}
	})
	return d
}

func (d *drainWatch) follow(w apiwatch.Interface, see func(obj any, at time.Time)) {
	for e := range w.ResultChan() {
		if e.Type != apiwatch.Added && e.Type != apiwatch.Modified {
			continue
		}
		at := time.Now()
		d.mu.Lock()
		see(e.Object, at)
		d.mu.Unlock()
	}
}

// drained says when tag lost its route and its pods on the target, once
// both happened.
func (d *drainWatch) drained(tag string) (unrouted, scaledDown time.Time, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	unrouted, routeGone := d.unrouted[tag]
	scaledDown, podsGone := d.scaledDown[tag]
	if !routeGone || !podsGone {
		return unrouted, scaledDown, fmt.Errorf("%s: %s lost its route %v, its pods %v", d.target, tag, routeGone, podsGone)
	}
	return unrouted, scaledDown, nil
}

// TestRelease_ABuildKeepsItsPodsForItsScaleDownDelay: with a scale-down
// delay of 2 s, v1, retired by v2's release, and v3, rolled back during
// its canary, each keep their pods on every target for 2 s after the
// VirtualService there stopped routing them (proxies apply a route change
// seconds after it is written), then lose them. Before, the pods went
// about 10 ms after the route.
func TestRelease_ABuildKeepsItsPodsForItsScaleDownDelay(t *testing.T) {
	const app, drain = "drain", 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watches := make([]*drainWatch, len(env.Targets))
	for i, target := range env.Targets {
		watches[i] = watchDrains(ctx, t, target, app)
	}
	create(t, build{app: app, tag: "v1", commit: 1, delay: 500 * time.Millisecond, drain: drain})
	state(t, 30*time.Second, app, "v1", "released")
	create(t, build{app: app, tag: "v2", commit: 2, delay: 500 * time.Millisecond, drain: drain})
	state(t, 30*time.Second, app, "v2", "released")
	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: 500 * time.Millisecond, drain: drain, canary: time.Minute})
	state(t, 30*time.Second, app, "v3", "canarying")
	percentAtLeast(t, app, "v3", 10)
	fail(t, v3)
	state(t, 30*time.Second, app, "v3", "failed")
	for _, tag := range []string{"v1", "v3"} {
		replicas(t, app, tag, 0)
		for _, w := range watches {
			unrouted, scaledDown, err := w.drained(tag)
			if err != nil {
				t.Fatal(err)
			}
			// The watch delivers each change a few milliseconds after
			// it is written: a tenth of the delay covers that.
			if held := scaledDown.Sub(unrouted); held < drain*9/10 {
				t.Errorf("%s: %s lost its pods %s after its last route, before its scale-down delay %s", w.target, tag, held, drain)
			} else {
				t.Logf("%s: %s kept its pods %s after its last route", w.target, tag, held.Round(time.Millisecond))
			}
		}
	}
}
