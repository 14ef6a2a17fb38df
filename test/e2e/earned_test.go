package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/e2e/story"
)

// routeWatch follows every version of an app's VirtualService and HTTPRoute
// on each target cluster, as the API server delivers them, and keeps the
// most each version gave each build, by cluster.
type routeWatch struct {
	mu       sync.Mutex
	most     map[string]map[string]int32
	versions int
	stop     context.CancelFunc
	done     sync.WaitGroup
}

// watchRoutes starts following app's routes on every target.
func watchRoutes(t *testing.T, app string) *routeWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &routeWatch{most: map[string]map[string]int32{}, stop: cancel}
	t.Cleanup(w.finish)
	for _, target := range lab.Targets {
		c, err := client.NewWithWatch(target.Config, client.Options{Scheme: lab.Delivery.Client.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		ns := client.InNamespace(app + "-" + story.Target)
		for _, list := range []client.ObjectList{&istionetworking.VirtualServiceList{}, &gatewayv1.HTTPRouteList{}} {
			watch, err := c.Watch(ctx, list, ns)
			if err != nil {
				t.Fatalf("watching the routes of %s on %s: %v", app, target.Name, err)
			}
			w.done.Add(1)
			go func() {
				defer w.done.Done()
				defer watch.Stop()
				for {
					select {
					case e, ok := <-watch.ResultChan():
						if !ok {
							return
						}
						if e.Type == apiwatch.Added || e.Type == apiwatch.Modified {
							w.saw(target.Name, releaseWeights(e.Object, app))
						}
					case <-ctx.Done():
						return
					}
				}
			}()
		}
	}
	return w
}

// releaseWeights are the weights of an app's release route in a
// VirtualService or HTTPRoute, by tag.
func releaseWeights(obj any, app string) map[string]int32 {
	weights := map[string]int32{}
	switch route := obj.(type) {
	case *istionetworking.VirtualService:
		for _, r := range route.Spec.Http {
			if strings.HasPrefix(r.Name, "01_release") {
				for _, d := range r.Route {
					weights[d.Destination.Subset] = max(weights[d.Destination.Subset], d.Weight)
				}
			}
		}
	case *gatewayv1.HTTPRoute:
		for _, rule := range route.Spec.Rules {
			if len(rule.Matches) > 0 && len(rule.Matches[0].Headers) > 0 {
				continue // a tag route, not the release's
			}
			for _, ref := range rule.BackendRefs {
				if tag, ok := strings.CutPrefix(string(ref.Name), app+"-"); ok && ref.Weight != nil {
					weights[tag] = max(weights[tag], *ref.Weight)
				}
			}
		}
	}
	return weights
}

func (w *routeWatch) saw(cluster string, weights map[string]int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.versions++
	if w.most[cluster] == nil {
		w.most[cluster] = map[string]int32{}
	}
	for tag, weight := range weights {
		w.most[cluster][tag] = max(w.most[cluster][tag], weight)
	}
}

func (w *routeWatch) finish() {
	w.stop()
	w.done.Wait()
}

// mostOf is the most any version of the routes on each cluster gave tag,
// and how many versions were seen.
func (w *routeWatch) mostOf(tag string) (map[string]int32, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int32{}
	for cluster, most := range w.most {
		out[cluster] = most[tag]
	}
	return out, w.versions
}

// failedAndBack waits until tag's Revision is failed and every cluster
// routes all of app's traffic to back, and returns the failure reason.
func failedAndBack(t *testing.T, app, tag, back string, timeout time.Duration) string {
	t.Helper()
	var reason string
	defer func() {
		if t.Failed() {
			s := story.Observe(context.Background(), lab, app)
			var pods []string
			for _, c := range s.Clusters {
				pods = append(pods, fmt.Sprintf("%s %v", c.Name, c.Pods))
			}
			rm := &picchuv1alpha1.ReleaseManager{}
			_ = lab.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + story.Target}, rm)
			t.Logf("%s's record:\n%s\npods: %s\nstatus: %+v", app, recordOf(app), strings.Join(pods, "; "), rm.Status)
		}
	}()
	until(t, timeout, app, tag+" failed and "+back+" serving everywhere", func(s story.Snapshot) error {
		rev := &picchuv1alpha1.Revision{}
		if err := lab.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: lab.Namespace, Name: app + "-" + tag}, rev); err != nil {
			return err
		}
		if !rev.Spec.Failed {
			b := s.Build(tag)
			return fmt.Errorf("%s %s at %d %%, not failed", tag, b.State, b.Percent)
		}
		reason = rev.Annotations[picchuv1alpha1.AnnotationFailedReason]
		for _, c := range s.Clusters {
			if c.Err != nil {
				return c.Err
			}
			if c.Routes() != back+"=100" {
				return fmt.Errorf("%s routes %q", c.Name, c.Routes())
			}
		}
		return nil
	})
	return reason
}

// secondBuildDuringTheFirstCanary: app's first build, v1, serves all the
// traffic through its canary (a minute); v2, erring half its requests, is
// applied during that canary, as CI applies a fix right after an app's
// first deploy. No version of any cluster's route gives v2 more than its
// 10 % canary (before, 90 %), its canary alert fails it, and its traffic
// goes back to v1 on every cluster; the mesh sends no request to a build
// without pods.
func secondBuildDuringTheFirstCanary(t *testing.T, app string, router picchuv1alpha1.Router) {
	quietNeighbour(t)
	ctx := context.Background()
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mesh.SetErrorRatio(ctx, lab.MeshURL, app, "v2", 0); err != nil {
			t.Error(err)
		}
	})
	if err := mesh.SetErrorRatio(ctx, lab.MeshURL, app, "v2", 0.5); err != nil {
		t.Fatal(err)
	}
	noneUnready := noRequestsToUnready(t, app)
	routed := func(r *picchuv1alpha1.Revision) { r.Spec.Targets[0].Router = router }
	apply(t, app, "v1", func(r *picchuv1alpha1.Revision) {
		routed(r)
		r.Spec.Targets[0].Canary.TTL = 60
	})
	until(t, 2*time.Minute, app, "v1 canarying, serving everything", func(s story.Snapshot) error {
		if b := s.Build("v1"); b.State != "canarying" || b.Percent != 100 {
			return fmt.Errorf("v1 %s at %d %%", b.State, b.Percent)
		}
		return nil
	})
	routes := watchRoutes(t, app)
	apply(t, app, "v2", routed)
	until(t, time.Minute, app, "v2 canarying", func(s story.Snapshot) error {
		if b := s.Build("v2"); b.State != "canarying" && !b.Failed {
			return fmt.Errorf("v2 %s", b.State)
		}
		return nil
	})
	reason := failedAndBack(t, app, "v2", "v1", time.Minute)
	if !strings.Contains(reason, "availability_canary") {
		t.Errorf("v2 failed for %q, want its canary alert availability_canary", reason)
	}
	most, versions := routes.mostOf("v2")
	t.Logf("v2 took at most %v in %d versions of the routes; failed: %s", most, versions, reason)
	for _, target := range lab.Targets {
		switch m := most[target.Name]; {
		case m > 10:
			t.Errorf("%s: a version of the route gave v2 %d %%, above its 10 %% canary, beside v1's canary", target.Name, m)
		case m == 0:
			t.Errorf("%s: no version of the route gave v2 its canary", target.Name)
		}
	}
	noneUnready()
}

// TestSecondBuildDuringTheFirstCanary: through Istio.
func TestSecondBuildDuringTheFirstCanary(t *testing.T) {
	secondBuildDuringTheFirstCanary(t, "second", picchuv1alpha1.RouterIstio)
}

// TestSecondBuildDuringTheFirstCanaryOnTheGatewayAPI: through the Gateway
// API.
func TestSecondBuildDuringTheFirstCanaryOnTheGatewayAPI(t *testing.T) {
	secondBuildDuringTheFirstCanary(t, "secondgw", picchuv1alpha1.RouterGatewayAPI)
}

// TestAnAlertAt80PercentRollsBack: v2 of app "late" canaries briefly, then
// steps to 80 % at once and holds it 30 s before 100 %. At 80 % the mesh
// fails half its requests: its SLO alert (an alert rule labelled
// slo="true") fails it, though it is past the original's 50 % cut-off, and
// its traffic goes back to v1 on both clusters, v1 keeping its pods for
// the scale-down delay all along.
func TestAnAlertAt80PercentRollsBack(t *testing.T) {
	quietNeighbour(t)
	ctx := context.Background()
	const app = "late"
	if err := story.Reset(ctx, lab, app); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mesh.SetErrorRatio(ctx, lab.MeshURL, app, "v2", 0); err != nil {
			t.Error(err)
		}
	})
	noneUnready := noRequestsToUnready(t, app)
	apply(t, app, "v1", func(r *picchuv1alpha1.Revision) { r.Spec.Targets[0].Canary.TTL = 3 })
	until(t, 2*time.Minute, app, "v1 released", releasedEverywhere("v1"))
	apply(t, app, "v2", func(r *picchuv1alpha1.Revision) {
		tg := &r.Spec.Targets[0]
		tg.Canary.TTL = 3
		tg.Release.GeometricScaling = picchuv1alpha1.GeometricScaling{Start: 80, Factor: 2, Delay: &metav1.Duration{Duration: 30 * time.Second}}
		// The build's error rate, on every build, labelled as SLO alerts
		// are: its tag from Istio's destination_version.
		tg.AlertRules = []monitoringv1.Rule{{
			Alert: "late_errors",
			Expr: intstr.FromString(`label_replace(sum by (destination_version) (rate(istio_requests_total{reporter="destination",destination_app="` +
				app + `",response_code=~"5.."}[3s])) > 0, "tag", "$1", "destination_version", "(.*)")`),
			Labels: map[string]string{"slo": "true", "app": app},
		}}
	})
	until(t, time.Minute, app, "v2 at 80 %", rampingAt("v2", 80))
	if err := mesh.SetErrorRatio(ctx, lab.MeshURL, app, "v2", 0.5); err != nil {
		t.Fatal(err)
	}
	reason := failedAndBack(t, app, "v2", "v1", time.Minute)
	rec, err := buildRecord(ctx, app, "v2")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("v2 failed at a peak of %d %%: %s", rec.PeakPercent, reason)
	if !strings.Contains(reason, "late_errors") || rec.PeakPercent < 80 || rec.PeakPercent >= 100 {
		t.Errorf("v2 failed for %q at a peak of %d %%, want late_errors at 80 %%", reason, rec.PeakPercent)
	}
	// The record follows the routes: the run that wrote them writes it next.
	until(t, 30*time.Second, app, "v2 recorded at 0 % on every cluster", func(story.Snapshot) error {
		rec, err := buildRecord(ctx, app, "v2")
		if err != nil {
			return err
		}
		if w := clusterPercents(rec); slices.ContainsFunc(slices.Collect(maps.Values(w)), func(p int32) bool { return p != 0 }) {
			return fmt.Errorf("v2 still recorded with traffic on a cluster: %v", w)
		}
		return nil
	})
	noneUnready()
	if t.Failed() {
		t.Log(recordOf(app))
	}
}
