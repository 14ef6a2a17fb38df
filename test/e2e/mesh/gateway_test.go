package mesh_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

// gatewayObjects are the build Services and HTTPRoutes Picchu writes for an
// app with one port, v1 at 70 % and v2 at 30 %, v2 routable by header.
func gatewayObjects(t *testing.T, app string) []client.Object {
	t.Helper()
	ports := []picchuv1alpha1.PortInfo{{Name: "http", Port: 80, ContainerPort: 8080, Mode: picchuv1alpha1.PortModeLocal}}
	r := manifests.Routing{App: app, Target: "production", Fleet: "production", Ports: ports, Releases: []manifests.Release{
		{Tag: "v2", Weight: 30, Tagged: true, TagRoutingHeader: "Medium-Tag"},
		{Tag: "v1", Weight: 70, Tagged: true},
	}}
	httpRoutes, _, err := manifests.GatewayRoutes(r, &picchuv1alpha1.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: picchuv1alpha1.AppNamespace(app, "production")}},
		manifests.BuildService(app, "production", "v1", ports), manifests.BuildService(app, "production", "v2", ports),
	}
	for _, h := range httpRoutes {
		objs = append(objs, h)
	}
	return objs
}

// TestMesh_GatewayRoutes: an app routed by the Gateway API gets the weights
// of its HTTPRoute's rule without headers, by the tags of the Services it
// weighs; once its route is gone from a cluster, that cluster's requests to
// it are counted as unrouted, and the other's are not.
func TestMesh_GatewayRoutes(t *testing.T) {
	ctx := context.Background()
	const app = "cart"
	for _, target := range env.Targets {
		for _, obj := range gatewayObjects(t, app) {
			if err := target.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: creating %T %s: %v", target.Name, obj, obj.GetName(), err)
			}
			t.Cleanup(func() {
				if _, ns := obj.(*corev1.Namespace); ns {
					return
				}
				if err := target.Client.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
					t.Error(err)
				}
			})
		}
	}
	m, srv, _ := newMesh(t, mesh.Options{Clusters: clusters(nil), RequestsPerSecond: 1000, Interval: 20 * time.Millisecond})
	runMesh(t, m)
	want := map[string]int32{"v1": 70, "v2": 30}
	kit.Eventually(t, testTimeout, "/weights shows each cluster's HTTPRoute", func() error {
		w, err := weights(srv.URL)
		if err != nil {
			return err
		}
		for _, target := range env.Targets {
			if got := w[target.Name][app]; !reflect.DeepEqual(got, want) {
				return fmt.Errorf("%s: %s's weights are %v, want %v (all: %v)", target.Name, app, got, want, w)
			}
		}
		return nil
	})

	gone, kept := env.Targets[0], env.Targets[1]
	route := &metav1.PartialObjectMetadata{}
	route.SetGroupVersionKind(manifests.HTTPRouteKind)
	route.SetNamespace(picchuv1alpha1.AppNamespace(app, "production"))
	route.SetName(app + "-http")
	if err := gone.Client.Delete(ctx, route); err != nil {
		t.Fatal(err)
	}
	unrouted := func(s samples, cluster string) float64 {
		n, _ := s.sum("mesh_unrouted_requests_total", map[string]string{"destination_cluster": cluster, "destination_app": app})
		return n
	}
	var s samples
	kit.Eventually(t, testTimeout, gone.Name+": requests to "+app+" counted as unrouted", func() error {
		var err error
		if s, err = scrape(srv.URL); err != nil {
			return err
		}
		if n := unrouted(s, gone.Name); n < 100 {
			return fmt.Errorf("%.0f unrouted requests", n)
		}
		return nil
	})
	if n := unrouted(s, kept.Name); n != 0 {
		t.Errorf("%s, whose route stays, counted %.0f unrouted requests", kept.Name, n)
	}
	n, err := mesh.Unrouted(ctx, srv.URL, app)
	if err != nil {
		t.Fatal(err)
	}
	if n < unrouted(s, gone.Name) {
		t.Errorf("GET /unrouted says %.0f requests, fewer than the %.0f counted before", n, unrouted(s, gone.Name))
	}
}
