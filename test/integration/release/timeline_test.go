package release_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// timeline watches one app's release as it happens: the weights in its
// ReleaseManager's status and in each target's VirtualService, and the
// stamps of one build's states and traffic steps. It only observes.
type timeline struct {
	mu sync.Mutex
	// routes holds, per cluster, each distinct weights of its release
	// route in the order they were seen.
	routes map[string][]string
	// gaps counts, per cluster, the looks that found neither an HTTPRoute
	// nor a VirtualService for the app after it had one.
	gaps map[string]int
	// steps are the distinct (percent, stamp) of the watched build, and
	// states its distinct (state, entered).
	steps  []stamp
	states []stamp
}

type stamp = kit.Stamp

// watch polls app every 20 ms until the test ends, following tag's states
// and steps.
func watch(t *testing.T, app, tag string) *timeline {
	tl := &timeline{routes: map[string][]string{}, gaps: map[string]int{}}
	every(t, 20*time.Millisecond, func(ctx context.Context) { tl.poll(ctx, app, tag) })
	return tl
}

// every calls look at once, then every interval, in a goroutine of its
// own, until the test ends; the test's cleanup waits for the last call.
func every(t *testing.T, interval time.Duration, look func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			look(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

func (tl *timeline) poll(ctx context.Context, app, tag string) {
	for _, target := range env.Targets {
		w, err := routeWeights(ctx, target, app)
		tl.mu.Lock()
		switch {
		case err == nil && w != "":
			if r := tl.routes[target.Name]; len(r) == 0 || r[len(r)-1] != w {
				tl.routes[target.Name] = append(r, w)
			}
		case apierrors.IsNotFound(err) && len(tl.routes[target.Name]) > 0:
			tl.gaps[target.Name]++
		}
		tl.mu.Unlock()
	}
	rm, err := releaseManager(ctx, app)
	if err != nil {
		return
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag != tag {
			continue
		}
		tl.mu.Lock()
		if st.LastUpdated != nil {
			s := stamp{Value: fmt.Sprint(st.CurrentPercent), At: st.LastUpdated.Time}
			if n := len(tl.steps); n == 0 || tl.steps[n-1] != s {
				tl.steps = append(tl.steps, s)
			}
		}
		if st.State.LastUpdated != nil {
			s := stamp{Value: st.State.Current, At: st.State.LastUpdated.Time}
			if n := len(tl.states); n == 0 || tl.states[n-1] != s {
				tl.states = append(tl.states, s)
			}
		}
		tl.mu.Unlock()
	}
}

// routeWeights reads the weights of app's release route on a target, as
// "tag=percent" sorted by tag, zeros left out: from its HTTPRoute when the
// Gateway API routes it, else from its VirtualService.
func routeWeights(ctx context.Context, target *harness.Target, app string) (string, error) {
	route := &gatewayv1.HTTPRoute{}
	err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app + "-http"}, route)
	switch {
	case err == nil:
		return httpRouteWeights(route, app), nil
	case !apierrors.IsNotFound(err):
		return "", err
	}
	vs := &istionetworking.VirtualService{}
	if err := target.Client.Get(ctx, client.ObjectKey{Namespace: app + "-production", Name: app}, vs); err != nil {
		return "", err
	}
	weights := map[string]int32{}
	for _, route := range vs.Spec.Http {
		if route.Name != "01_release-http" {
			continue
		}
		for _, d := range route.Route {
			if d.Weight > 0 {
				weights[d.Destination.Subset] = d.Weight
			}
		}
	}
	return formatWeights(weights), nil
}

// httpRouteWeights are the weights of an HTTPRoute's rule without
// headers, by the tag of each build Service ("<app>-<tag>").
func httpRouteWeights(route *gatewayv1.HTTPRoute, app string) string {
	weights := map[string]int32{}
	for _, rule := range route.Spec.Rules {
		if len(rule.Matches) == 0 || len(rule.Matches[0].Headers) > 0 {
			continue
		}
		for _, ref := range rule.BackendRefs {
			if ref.Weight != nil {
				weights[strings.TrimPrefix(string(ref.Name), app+"-")] = *ref.Weight
			}
		}
	}
	return formatWeights(weights)
}

func formatWeights(w map[string]int32) string {
	var parts []string
	for _, tag := range slices.Sorted(maps.Keys(w)) {
		if w[tag] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", tag, w[tag]))
		}
	}
	return strings.Join(parts, " ")
}

// routesOf returns what a cluster's release route went through.
func (tl *timeline) routesOf(cluster string) []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.routes[cluster])
}

// gapsOf returns how many looks found no route on a cluster that had one.
func (tl *timeline) gapsOf(cluster string) int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.gaps[cluster]
}

// stepsOf returns the watched build's traffic steps.
func (tl *timeline) stepsOf() []stamp {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.steps)
}

// entered returns when the watched build entered state, or zero.
func (tl *timeline) entered(state string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, s := range tl.states {
		if s.Value == state {
			return s.At
		}
	}
	return time.Time{}
}
