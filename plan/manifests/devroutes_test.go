package manifests_test

import (
	"slices"
	"strings"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// TestVirtualService_DevRoute: on a cluster that enables dev routes, with
// the developer service set, a request carrying the cluster's dev-route
// header, whatever its value, goes to that service ahead of every other
// route, on each match of the app's release routes; otherwise there is no
// such route.
func TestVirtualService_DevRoute(t *testing.T) {
	r := routing()
	r.DevRoutes = manifests.DevRoutes{Host: "dev-router.dev.svc.cluster.local", Port: 8080}
	c := cluster()
	c.Spec.EnableDevRoutes = true
	c.Spec.DevRouteTagTemplate = "X-Dev-{{.Namespace}}"
	vs := virtualService(t, r, c)
	if len(vs.Http) == 0 || vs.Http[0].Name != "00_dev-shop" {
		t.Fatalf("routes %v, want 00_dev-shop first", routeNames(vs))
	}
	dev := vs.Http[0]
	var releaseMatches int
	for _, route := range vs.Http {
		if strings.HasPrefix(route.Name, "01_release-") {
			releaseMatches += len(route.Match)
		}
	}
	if len(dev.Match) != releaseMatches {
		t.Errorf("dev route has %d matches, want the release routes' %d", len(dev.Match), releaseMatches)
	}
	for _, m := range dev.Match {
		h := m.Headers["x-dev-shop-production"]
		if h == nil || h.GetRegex() != ".*" {
			t.Errorf("match %v: want header x-dev-shop-production with any value", m)
		}
	}
	if d := dev.Route; len(d) != 1 || d[0].Destination.Host != "dev-router.dev.svc.cluster.local" || d[0].Destination.Port.Number != 8080 {
		t.Errorf("dev route goes to %v", d)
	}

	for name, change := range map[string]func(*manifests.Routing, *picchuv1alpha1.Cluster){
		"cluster without dev routes": func(_ *manifests.Routing, c *picchuv1alpha1.Cluster) { c.Spec.EnableDevRoutes = false },
		"no service host":            func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) { r.DevRoutes.Host = "" },
		"no service port":            func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) { r.DevRoutes.Port = 0 },
	} {
		r, c := routing(), cluster()
		r.DevRoutes = manifests.DevRoutes{Host: "dev-router", Port: 80}
		c.Spec.EnableDevRoutes = true
		change(&r, c)
		if names := routeNames(virtualService(t, r, c)); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "00_dev-") }) {
			t.Errorf("%s: routes %v have a dev route", name, names)
		}
	}

	c = cluster()
	c.Spec.EnableDevRoutes, c.Spec.DevRouteTagTemplate = true, "{{.Nope}}"
	if _, _, err := manifests.VirtualServices(r, c); err == nil || !strings.Contains(err.Error(), "spec.devRouteTagTemplate") {
		t.Errorf("a template that does not render: error %v, want one naming spec.devRouteTagTemplate", err)
	}
}
