package manifests_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/kit"
)

// gatewayRouting is routing() as the Gateway API can route it: without the
// retries only Istio has.
func gatewayRouting() manifests.Routing {
	r := routing()
	r.Ports[0].Istio.HTTP.Retries = nil
	return r
}

func gatewayRoutes(t *testing.T, r manifests.Routing) (map[string]*gatewayv1.HTTPRoute, map[string]*gatewayv1.GRPCRoute) {
	t.Helper()
	httpRoutes, grpcRoutes, err := manifests.GatewayRoutes(r, cluster())
	if err != nil {
		t.Fatal(err)
	}
	hs, gs := map[string]*gatewayv1.HTTPRoute{}, map[string]*gatewayv1.GRPCRoute{}
	for _, h := range httpRoutes {
		hs[h.Name] = h
	}
	for _, g := range grpcRoutes {
		gs[g.Name] = g
	}
	return hs, gs
}

// parents says a route's parents as "<kind> <namespace>/<name>:<port>".
func parents(refs []gatewayv1.ParentReference) []string {
	var out []string
	for _, ref := range refs {
		kind, ns := "Gateway", ""
		if ref.Kind != nil {
			kind = string(*ref.Kind)
		}
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		port := "*"
		if ref.Port != nil {
			port = fmt.Sprint(*ref.Port)
		}
		out = append(out, fmt.Sprintf("%s %s/%s:%s", kind, ns, ref.Name, port))
	}
	return out
}

// backends says a rule's backends as "<service>:<port>=<weight>".
func backends[R gatewayv1.HTTPBackendRef | gatewayv1.GRPCBackendRef](refs []R) []string {
	var out []string
	for _, r := range refs {
		var ref gatewayv1.BackendRef
		switch b := any(r).(type) {
		case gatewayv1.HTTPBackendRef:
			ref = b.BackendRef
		case gatewayv1.GRPCBackendRef:
			ref = b.BackendRef
		}
		weight := int32(1)
		if ref.Weight != nil {
			weight = *ref.Weight
		}
		out = append(out, fmt.Sprintf("%s:%d=%d", ref.Name, *ref.Port, weight))
	}
	return out
}

func hostnames(hs []gatewayv1.Hostname) []string {
	var out []string
	for _, h := range hs {
		out = append(out, string(h))
	}
	return out
}

// Test_GatewayRoutes_Routes: per port, a route inside the cluster (its
// parent the app's Service) and one per ingress with the hosts the
// VirtualService matches there; a header rule per tagged build, then the
// weights; gRPC ports get GRPCRoutes.
func Test_GatewayRoutes_Routes(t *testing.T) {
	hs, gs := gatewayRoutes(t, gatewayRouting())
	if got, want := slices.Sorted(func(yield func(string) bool) {
		for name := range hs {
			if !yield(name) {
				return
			}
		}
	}), []string{"shop-http", "shop-http-private", "shop-http-public", "shop-status"}; !slices.Equal(got, want) {
		t.Errorf("HTTPRoutes %v, want %v", got, want)
	}
	if len(gs) != 2 || gs["shop-grpc"] == nil || gs["shop-grpc-private"] == nil {
		t.Errorf("GRPCRoutes %v, want shop-grpc and shop-grpc-private", gs)
	}
	for name, route := range hs {
		if route.Namespace != "shop-production" || route.Labels[picchuv1alpha1.LabelApp] != "shop" {
			t.Errorf("%s: metadata %s %v", name, route.Namespace, route.Labels)
		}
	}
	mesh := hs["shop-http"]
	if got := parents(mesh.Spec.ParentRefs); !slices.Equal(got, []string{"Service /shop:80"}) {
		t.Errorf("mesh route parents %v", got)
	}
	if len(mesh.Spec.Hostnames) != 0 {
		t.Errorf("mesh route hostnames %v, want none", mesh.Spec.Hostnames)
	}
	public := hs["shop-http-public"]
	if got, want := parents(public.Spec.ParentRefs), []string{"Gateway istio-system/public-gateway:*"}; !slices.Equal(got, want) {
		t.Errorf("public route parents %v, want %v", got, want)
	}
	if got, want := hostnames(public.Spec.Hostnames), []string{"shop-production.example.com", "shop.example.com", "shop.example.org"}; !slices.Equal(got, want) {
		t.Errorf("public hostnames %v, want %v", got, want)
	}
	if got, want := hostnames(hs["shop-http-private"].Spec.Hostnames), []string{"shop-production.internal.example.com", "shop.example.org", "shop.internal.example.com"}; !slices.Equal(got, want) {
		t.Errorf("private hostnames %v, want %v", got, want)
	}
	for _, route := range []*gatewayv1.HTTPRoute{mesh, public} {
		rules := route.Spec.Rules
		if len(rules) != 3 {
			t.Fatalf("%s: %d rules, want v2's header, v1's header, the weights", route.Name, len(rules))
		}
		for i, tag := range []string{"v2", "v1"} {
			m := rules[i].Matches[0]
			if len(m.Headers) != 1 || m.Headers[0].Name != "Medium-Tag" || m.Headers[0].Value != tag || *m.Headers[0].Type != gatewayv1.HeaderMatchExact {
				t.Errorf("%s: rule %d headers %v, want Medium-Tag: %s", route.Name, i, m.Headers, tag)
			}
			if got, want := backends(rules[i].BackendRefs), []string{"shop-" + tag + ":80=1"}; !slices.Equal(got, want) {
				t.Errorf("%s: rule %d backends %v, want %v", route.Name, i, got, want)
			}
		}
		if got, want := backends(rules[2].BackendRefs), []string{"shop-v2:80=20", "shop-v1:80=80"}; !slices.Equal(got, want) {
			t.Errorf("%s: weights %v, want %v", route.Name, got, want)
		}
		if rules[2].Matches[0].Headers != nil || *rules[2].Matches[0].Path.Value != "/" {
			t.Errorf("%s: the weighted rule matches %v", route.Name, rules[2].Matches)
		}
		for _, rule := range rules {
			if rule.Timeouts == nil || *rule.Timeouts.Request != "15s" {
				t.Errorf("%s: timeouts %v, want the port's 15s", route.Name, rule.Timeouts)
			}
		}
	}
	grpc := gs["shop-grpc-private"]
	if got, want := parents(grpc.Spec.ParentRefs), []string{"Gateway istio-system/private-gateway:9000"}; !slices.Equal(got, want) {
		t.Errorf("gRPC parents %v, want %v", got, want)
	}
	if got, want := backends(grpc.Spec.Rules[2].BackendRefs), []string{"shop-v2:9000=20", "shop-v1:9000=80"}; !slices.Equal(got, want) {
		t.Errorf("gRPC weights %v, want %v", got, want)
	}
	if h := grpc.Spec.Rules[0].Matches[0].Headers; len(h) != 1 || h[0].Name != "Medium-Tag" || h[0].Value != "v2" {
		t.Errorf("gRPC header rule %v", h)
	}

	hs2, gs2 := gatewayRoutes(t, gatewayRouting())
	if !reflect.DeepEqual(hs, hs2) || !reflect.DeepEqual(gs, gs2) {
		t.Error("not deterministic")
	}
}

// Test_GatewayRoutes_Weights: a build without weight is not weighed, and
// one untagged, or without a header, has no header rule.
func Test_GatewayRoutes_Weights(t *testing.T) {
	r := gatewayRouting()
	r.Releases[0].Weight, r.Releases[1].Weight = 0, 100
	r.Releases[1].Tagged = false
	hs, _ := gatewayRoutes(t, r)
	rules := hs["shop-http"].Spec.Rules
	if len(rules) != 2 {
		t.Fatalf("%d rules, want v2's header rule and the weights", len(rules))
	}
	if got := backends(rules[1].BackendRefs); !slices.Equal(got, []string{"shop-v1:80=100"}) {
		t.Errorf("weights %v", got)
	}
	r = gatewayRouting()
	r.Releases[0].TagRoutingHeader = ""
	hs, _ = gatewayRoutes(t, r)
	if n := len(hs["shop-http"].Spec.Rules); n != 2 {
		t.Errorf("%d rules, want v1's header rule and the weights", n)
	}
}

func Test_GatewayRoutes_NoneWithoutRoutes(t *testing.T) {
	cases := map[string]func(*manifests.Routing){
		"no releases":           func(r *manifests.Routing) { r.Releases = nil },
		"no ports":              func(r *manifests.Routing) { r.Ports = nil },
		"no weight, no headers": func(r *manifests.Routing) { r.Releases = []manifests.Release{{Tag: "v1", Tagged: true}} },
		"no weight, not tagged": func(r *manifests.Routing) {
			r.Releases = []manifests.Release{{Tag: "v1", TagRoutingHeader: "Medium-Tag"}}
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			r := gatewayRouting()
			edit(&r)
			if hs, gs, err := manifests.GatewayRoutes(r, cluster()); len(hs) != 0 || len(gs) != 0 || err != nil {
				t.Errorf("got %v, %v, %v; want none", hs, gs, err)
			}
		})
	}
}

// Test_GatewayRoutes_RefusesWhatOnlyIstioSays: retries and faults are
// refused, naming the field; timeouts are written as the Gateway API
// writes durations.
func Test_GatewayRoutes_RefusesWhatOnlyIstioSays(t *testing.T) {
	if _, _, err := manifests.GatewayRoutes(routing(), cluster()); err == nil || !strings.Contains(err.Error(), "port http: istio.http.retries") {
		t.Errorf("retries: error %v, want one naming port http's istio.http.retries", err)
	}
	r := gatewayRouting()
	r.Faults = []picchuv1alpha1.HTTPPortFault{{PortSelector: &picchuv1alpha1.PortSelector{Number: 9000},
		Fault: &picchuv1alpha1.HTTPFaultInjection{Abort: &picchuv1alpha1.FaultAbort{HTTPStatus: 503}}}}
	if _, _, err := manifests.GatewayRoutes(r, cluster()); err == nil || !strings.Contains(err.Error(), "port grpc: fault 0") {
		t.Errorf("faults: error %v, want one naming port grpc's fault 0", err)
	}
	for timeout, want := range map[string]gatewayv1.Duration{"15s": "15s", "1.5s": "1s500ms", "90m": "1h30m", "250ms": "250ms"} {
		r := gatewayRouting()
		r.Ports[0].Istio.HTTP.Timeout = timeout
		hs, _ := gatewayRoutes(t, r)
		if got := *hs["shop-http"].Spec.Rules[0].Timeouts.Request; got != want {
			t.Errorf("timeout %s written %s, want %s", timeout, got, want)
		}
	}
	r = gatewayRouting()
	r.Ports[1].Istio.HTTP.Timeout = "5s"
	if _, _, err := manifests.GatewayRoutes(r, cluster()); err == nil || !strings.Contains(err.Error(), "port grpc: istio.http.timeout") {
		t.Errorf("a gRPC port's timeout: error %v, want one naming port grpc's istio.http.timeout", err)
	}
	r = gatewayRouting()
	r.Ports[0].Istio.HTTP.Timeout = "soon"
	if _, _, err := manifests.GatewayRoutes(r, cluster()); err == nil || !strings.Contains(err.Error(), "istio.http.timeout") {
		t.Errorf("a bad timeout: error %v", err)
	}
}

// Test_GatewayRoutes_DevRoute: on a cluster with dev routes, each route
// with weights first sends requests carrying the dev header (any value) to
// the developer service; elsewhere, or without the service, there is no
// such rule, and a developer service that is not a Service is an error
// naming the flag.
func Test_GatewayRoutes_DevRoute(t *testing.T) {
	r := gatewayRouting()
	r.DevRoutes = manifests.DevRoutes{Host: "dev-router.dev.svc.cluster.local", Port: 8080}
	c := cluster()
	c.Spec.EnableDevRoutes = true
	c.Spec.DevRouteTagTemplate = "X-Dev-{{.Namespace}}"
	httpRoutes, grpcRoutes, err := manifests.GatewayRoutes(r, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range httpRoutes {
		dev := route.Spec.Rules[0]
		h := dev.Matches[0].Headers
		if len(h) != 1 || h[0].Name != "x-dev-shop-production" || *h[0].Type != gatewayv1.HeaderMatchRegularExpression || h[0].Value != ".*" {
			t.Errorf("%s: first rule matches %v, want the dev header with any value", route.Name, dev.Matches)
		}
		ref := dev.BackendRefs[0]
		if len(dev.BackendRefs) != 1 || ref.Name != "dev-router" || ref.Namespace == nil || *ref.Namespace != "dev" || *ref.Port != 8080 {
			t.Errorf("%s: the dev rule goes to %v", route.Name, dev.BackendRefs)
		}
		if len(route.Spec.Rules) != 4 {
			t.Errorf("%s: %d rules, want dev, two header rules, weights", route.Name, len(route.Spec.Rules))
		}
	}
	for _, route := range grpcRoutes {
		if h := route.Spec.Rules[0].Matches[0].Headers; len(h) != 1 || h[0].Name != "x-dev-shop-production" || h[0].Value != ".*" {
			t.Errorf("%s: first rule matches %v, want the dev header", route.Name, route.Spec.Rules[0].Matches)
		}
	}

	for name, change := range map[string]func(*manifests.Routing, *picchuv1alpha1.Cluster){
		"cluster without dev routes": func(_ *manifests.Routing, c *picchuv1alpha1.Cluster) { c.Spec.EnableDevRoutes = false },
		"no service host":            func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) { r.DevRoutes.Host = "" },
		"no service port":            func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) { r.DevRoutes.Port = 0 },
	} {
		r, c := gatewayRouting(), cluster()
		r.DevRoutes = manifests.DevRoutes{Host: "dev-router.dev", Port: 80}
		c.Spec.EnableDevRoutes = true
		change(&r, c)
		hs, _, err := manifests.GatewayRoutes(r, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, route := range hs {
			if n := len(route.Spec.Rules); n != 3 {
				t.Errorf("%s: %s has %d rules, want no dev rule", name, route.Name, n)
			}
		}
	}
	r.DevRoutes.Host = "dev.example.com"
	if _, _, err := manifests.GatewayRoutes(r, c); err == nil || !strings.Contains(err.Error(), "--dev-routes-service-host") {
		t.Errorf("a developer service that is no Service: error %v, want one naming --dev-routes-service-host", err)
	}
}

// Test_BuildServiceName: a build's Service is "<app>-<tag>" when that is a
// Service name, and otherwise a valid name no other tag gets.
func Test_BuildServiceName(t *testing.T) {
	if got := manifests.BuildServiceName("shop", "v2"); got != "shop-v2" {
		t.Errorf("BuildServiceName(shop, v2) = %s", got)
	}
	long := strings.Repeat("a", 60)
	names := map[string]string{}
	for _, tag := range []string{"v1.2", "v1-2", "v1.2.3", long + "1", long + "2", "0abc"} {
		name := manifests.BuildServiceName("shop", tag)
		if errs := validation.IsDNS1035Label(name); len(errs) != 0 {
			t.Errorf("tag %s: Service name %s: %v", tag, name, errs)
		}
		if other, ok := names[name]; ok {
			t.Errorf("tags %s and %s share the Service %s", other, tag, name)
		}
		names[name] = tag
	}
}

// TestGatewayRoutes_ApplyToARealCluster applies the app's Gateway API
// routes and build Services to a target API server with the Gateway API's
// standard CRDs, which validate them; the weights read back are those
// built, and applying them again, rebuilt, changes nothing.
func TestGatewayRoutes_ApplyToARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	r := gatewayRouting()
	r.App = "basket"
	r.DevRoutes = manifests.DevRoutes{Host: "dev-router.dev.svc.cluster.local", Port: 8080}
	c0 := cluster()
	c0.Spec.EnableDevRoutes = true
	objects := func() []client.Object {
		hs, gs, err := manifests.GatewayRoutes(r, c0)
		if err != nil {
			t.Fatal(err)
		}
		objs := []client.Object{manifests.AppNamespace(r.App, r.Target, manifests.MeshSidecar), manifests.Service(r.App, r.Target, r.Ports)}
		for _, rel := range r.Releases {
			objs = append(objs, manifests.BuildService(r.App, r.Target, rel.Tag, r.Ports))
		}
		for _, h := range hs {
			objs = append(objs, h)
		}
		for _, g := range gs {
			objs = append(objs, g)
		}
		return objs
	}
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	want := objects()
	if len(want) != 10 {
		t.Fatalf("%d objects, want the namespace, 3 Services, 4 HTTPRoutes and 2 GRPCRoutes", len(want))
	}
	for _, obj := range want {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T %s: %v", obj, obj.GetName(), err)
		}
	}
	versions := map[string]string{}
	for _, obj := range want[1:] {
		got := empty(obj)
		if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatalf("reading %T %s: %v", obj, obj.GetName(), err)
		}
		versions[obj.GetName()] = got.GetResourceVersion()
		switch g := got.(type) {
		case *gatewayv1.HTTPRoute:
			w := obj.(*gatewayv1.HTTPRoute)
			if got, want := backends(g.Spec.Rules[len(g.Spec.Rules)-1].BackendRefs), backends(w.Spec.Rules[len(w.Spec.Rules)-1].BackendRefs); !slices.Equal(got, want) {
				t.Errorf("%s: stored weights %v, want %v", g.Name, got, want)
			}
			if !slices.Equal(hostnames(g.Spec.Hostnames), hostnames(w.Spec.Hostnames)) || len(g.Spec.ParentRefs) != len(w.Spec.ParentRefs) {
				t.Errorf("%s: stored hostnames %v and parents %v", g.Name, g.Spec.Hostnames, parents(g.Spec.ParentRefs))
			}
		case *gatewayv1.GRPCRoute:
			w := obj.(*gatewayv1.GRPCRoute)
			if got, want := backends(g.Spec.Rules[len(g.Spec.Rules)-1].BackendRefs), backends(w.Spec.Rules[len(w.Spec.Rules)-1].BackendRefs); !slices.Equal(got, want) {
				t.Errorf("%s: stored weights %v, want %v", g.Name, got, want)
			}
		}
	}
	// A new applier remembers nothing, so this sends every object again:
	// what the API server stored is what was built, defaults aside.
	again := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	for _, obj := range objects()[1:] {
		if err := again.Apply(ctx, obj); err != nil {
			t.Fatal(err)
		}
		got := empty(obj)
		if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if v := versions[obj.GetName()]; got.GetResourceVersion() != v {
			t.Errorf("%T %s changed on the second apply: resourceVersion %s, was %s", obj, obj.GetName(), got.GetResourceVersion(), v)
		}
	}
}

// TestGatewayRoutes_ExperimentalChannel applies the same routes to an API
// server of its own with the Gateway API's experimental CRDs (which a
// cluster running a Gateway implementation's newest features has), which
// validate them too, and which store them as built.
func TestGatewayRoutes_ExperimentalChannel(t *testing.T) {
	ctx := context.Background()
	paths, err := kit.GatewayAPICRDPaths(ctx, "experimental")
	if err != nil {
		t.Fatal(err)
	}
	assets, err := kit.Assets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testEnv := &envtest.Environment{Scheme: env.Scheme, BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout,
		CRDInstallOptions: envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}}
	cfg, err := testEnv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testEnv.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := gatewayRouting()
	r.DevRoutes = manifests.DevRoutes{Host: "dev-router.dev", Port: 8080}
	withDev := cluster()
	withDev.Spec.EnableDevRoutes = true
	hs, gs, err := manifests.GatewayRoutes(r, withDev)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{manifests.AppNamespace(r.App, r.Target, manifests.MeshSidecar)}
	for _, h := range hs {
		objs = append(objs, h)
	}
	for _, g := range gs {
		objs = append(objs, g)
	}
	applied := applier.NewCluster(env.Targets[0].Cluster, c, c, "", log.Log)
	for _, obj := range objs {
		if err := applied.Apply(ctx, obj); err != nil {
			t.Fatalf("the experimental channel rejected %T %s: %v", obj, obj.GetName(), err)
		}
	}
	for _, h := range hs {
		got := &gatewayv1.HTTPRoute{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(h), got); err != nil {
			t.Fatal(err)
		}
		for i, rule := range h.Spec.Rules {
			if g, w := backends(got.Spec.Rules[i].BackendRefs), backends(rule.BackendRefs); !slices.Equal(g, w) {
				t.Errorf("%s rule %d: stored backends %v, want %v", h.Name, i, g, w)
			}
		}
	}
}
