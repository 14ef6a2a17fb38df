package manifests_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	istioapi "istio.io/api/networking/v1alpha3"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

// routing is a realistic app: a public HTTP port with retries and a timeout,
// a private gRPC port and a mesh-only status port; a new build at 20% and
// the old one at 80%, both routable by header.
func routing() manifests.Routing {
	return manifests.Routing{
		App: "shop", Target: "production", Fleet: "production",
		Ports: []picchuv1alpha1.PortInfo{
			{
				Name: "http", Port: 80, IngressPort: 443, Mode: picchuv1alpha1.PortModePublic,
				Ingresses: []picchuv1alpha1.Ingress{picchuv1alpha1.IngressPrivate, picchuv1alpha1.IngressPublic},
				Hosts:     []string{"shop.example.org"},
				Istio: picchuv1alpha1.PortIstioConfig{HTTP: picchuv1alpha1.PortIstioHTTPConfig{
					Retries: &picchuv1alpha1.HTTPRetry{Attempts: 3, PerTryTimeout: "2s", RetryOn: "5xx,connect-failure"},
					Timeout: "15s",
				}},
			},
			{
				Name: "grpc", Port: 9000, IngressPort: 9000, Mode: picchuv1alpha1.PortModePrivate,
				Ingresses: []picchuv1alpha1.Ingress{picchuv1alpha1.IngressPrivate},
				Hosts:     []string{"shop-grpc.internal.example.com"},
			},
			{Name: "status", Port: 4444, IngressPort: 443, Mode: picchuv1alpha1.PortModeLocal},
		},
		DefaultIngressPorts: map[string]string{"public": "http", "private": "http"},
		Releases: []manifests.Release{
			{Tag: "v2", Weight: 20, TagRoutingHeader: "Medium-Tag", Tagged: true, TrafficPolicy: &picchuv1alpha1.TrafficPolicy{
				TLS: &picchuv1alpha1.ClientTLSSettings{Mode: 3},
			}},
			{Tag: "v1", Weight: 80, TagRoutingHeader: "Medium-Tag", Tagged: true},
		},
		EgressHosts: []string{"./*", "istio-system/*"},
	}
}

func Test_DestinationRule(t *testing.T) {
	dr, err := manifests.DestinationRule(routing())
	if err != nil {
		t.Fatal(err)
	}
	if dr.Name != "shop" || dr.Namespace != "shop-production" || dr.Labels[picchuv1alpha1.LabelApp] != "shop" || dr.Labels[picchuv1alpha1.LabelTarget] != "production" {
		t.Errorf("metadata %s/%s %v", dr.Namespace, dr.Name, dr.Labels)
	}
	if dr.Spec.Host != "shop.shop-production.svc.cluster.local" {
		t.Errorf("host %q", dr.Spec.Host)
	}
	if len(dr.Spec.Subsets) != 2 {
		t.Fatalf("subsets %v", dr.Spec.Subsets)
	}
	for i, tag := range []string{"v2", "v1"} {
		s := dr.Spec.Subsets[i]
		if s.Name != tag || !reflect.DeepEqual(s.Labels, map[string]string{"tag.picchu.medium.engineering": tag}) {
			t.Errorf("subset %d: %s %v, want %s selecting its pods by tag", i, s.Name, s.Labels, tag)
		}
	}
	if p := dr.Spec.Subsets[0].TrafficPolicy; p.GetTls().GetMode() != istioapi.ClientTLSSettings_ISTIO_MUTUAL {
		t.Errorf("v2 policy %v, want ISTIO_MUTUAL tls", p)
	}
	if p := dr.Spec.Subsets[1].TrafficPolicy; p != nil {
		t.Errorf("v1 has no policy, got %v", p)
	}

	again, _ := manifests.DestinationRule(routing())
	if !proto.Equal(&dr.Spec, &again.Spec) {
		t.Errorf("not deterministic")
	}

	r := routing()
	r.Releases = nil
	if dr, err := manifests.DestinationRule(r); dr != nil || err != nil {
		t.Errorf("no releases: %v, %v; want nil, nil", dr, err)
	}
}

func Test_Sidecar(t *testing.T) {
	sc := manifests.Sidecar(routing())
	if sc.Name != "shop" || sc.Namespace != "shop-production" || sc.Labels[picchuv1alpha1.LabelApp] != "shop" {
		t.Errorf("metadata %s/%s %v", sc.Namespace, sc.Name, sc.Labels)
	}
	if len(sc.Spec.Egress) != 1 || !reflect.DeepEqual(sc.Spec.Egress[0].Hosts, []string{"./*", "istio-system/*"}) {
		t.Errorf("egress %v", sc.Spec.Egress)
	}
	r := routing()
	r.EgressHosts = nil
	if sc := manifests.Sidecar(r); sc != nil {
		t.Errorf("no egress hosts: %v, want nil", sc)
	}
}

func cluster() *picchuv1alpha1.Cluster {
	c := &picchuv1alpha1.Cluster{}
	c.Name = "prod-a"
	c.Spec.Ingresses = picchuv1alpha1.ClusterIngresses{
		Public: picchuv1alpha1.IngressInfo{
			Gateway: "istio-system/public-gateway", DefaultDomains: []string{"example.com"}, AllowedDomains: []string{"example.org"},
		},
		Private: picchuv1alpha1.IngressInfo{
			Gateway: "istio-system/private-gateway", DefaultDomains: []string{"internal.example.com"}, AllowedDomains: []string{"example.org"},
		},
	}
	return c
}

// virtualService is the spec of the app's VirtualService in the mesh.
func virtualService(t *testing.T, r manifests.Routing, c *picchuv1alpha1.Cluster) *istioapi.VirtualService {
	t.Helper()
	mesh, _ := virtualServices(t, r, c)
	if mesh == nil {
		t.Fatal("no VirtualService in the mesh")
	}
	return mesh
}

// virtualServices are the specs of the app's VirtualServices in the mesh
// and on the ingresses, nil where there is none.
func virtualServices(t *testing.T, r manifests.Routing, c *picchuv1alpha1.Cluster) (mesh, ingress *istioapi.VirtualService) {
	t.Helper()
	m, i, err := manifests.VirtualServices(r, c)
	if err != nil {
		t.Fatal(err)
	}
	if m != nil {
		mesh = &m.Spec
	}
	if i != nil {
		ingress = &i.Spec
	}
	return mesh, ingress
}

func routeNames(vs *istioapi.VirtualService) []string {
	var out []string
	for _, r := range vs.Http {
		out = append(out, r.Name)
	}
	return out
}

func route(t *testing.T, vs *istioapi.VirtualService, name string) *istioapi.HTTPRoute {
	t.Helper()
	for _, r := range vs.Http {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no route %s in %v", name, routeNames(vs))
	return nil
}

// destinations renders a route's destinations as "subset:port=weight".
func destinations(r *istioapi.HTTPRoute) []string {
	var out []string
	for _, d := range r.Route {
		out = append(out, fmt.Sprintf("%s:%d=%d", d.Destination.Subset, d.Destination.Port.GetNumber(), d.Weight))
	}
	return out
}

// matches renders a route's match blocks as "gateway:port uri-or-authority".
func matches(r *istioapi.HTTPRoute) []string {
	var out []string
	for _, m := range r.Match {
		what := "/" + m.GetUri().GetPrefix()
		if m.Authority != nil {
			what = m.GetAuthority().GetRegex()
		}
		out = append(out, fmt.Sprintf("%s:%d %s", strings.Join(m.Gateways, ","), m.Port, what))
	}
	return out
}

func Test_VirtualService_Routes(t *testing.T) {
	mesh, ingress, err := manifests.VirtualServices(routing(), cluster())
	if err != nil {
		t.Fatal(err)
	}
	if mesh.Name != "shop" || mesh.Namespace != "shop-production" || mesh.Labels[picchuv1alpha1.LabelApp] != "shop" {
		t.Errorf("mesh metadata %s/%s %v", mesh.Namespace, mesh.Name, mesh.Labels)
	}
	if ingress.Name != "shop-ingress" || ingress.Namespace != "shop-production" || ingress.Labels[picchuv1alpha1.LabelApp] != "shop" {
		t.Errorf("ingress metadata %s/%s %v", ingress.Namespace, ingress.Name, ingress.Labels)
	}
	for _, tc := range []struct {
		vs                       *istioapi.VirtualService
		routes, hosts, gateways  []string
		httpMatches, grpcMatches int
	}{
		{
			vs: &mesh.Spec,
			routes: []string{
				"00_tagged-v1-grpc", "00_tagged-v1-http", "00_tagged-v1-status",
				"00_tagged-v2-grpc", "00_tagged-v2-http", "00_tagged-v2-status",
				"01_release-grpc", "01_release-http", "01_release-status",
			},
			// The ports' hosts are never bound in the mesh.
			hosts:       []string{"shop.shop-production.svc.cluster.local"},
			gateways:    []string{"mesh"},
			httpMatches: 1, grpcMatches: 1,
		},
		{
			vs: &ingress.Spec,
			// The status port is in the mesh alone.
			routes: []string{
				"00_tagged-v1-grpc", "00_tagged-v1-http", "00_tagged-v2-grpc", "00_tagged-v2-http", "01_release-grpc", "01_release-http",
			},
			hosts: []string{
				"shop-grpc.internal.example.com", "shop-production.example.com", "shop-production.internal.example.com",
				"shop.example.com", "shop.example.org", "shop.internal.example.com",
			},
			gateways:    []string{"istio-system/private-gateway", "istio-system/public-gateway"},
			httpMatches: 4, grpcMatches: 1,
		},
	} {
		spec := tc.vs
		if got := routeNames(spec); !reflect.DeepEqual(got, tc.routes) {
			t.Errorf("routes\n got %v\nwant %v", got, tc.routes)
		}
		if got := destinations(route(t, spec, "01_release-http")); !reflect.DeepEqual(got, []string{"v2:80=20", "v1:80=80"}) {
			t.Errorf("release destinations %v", got)
		}
		if got := destinations(route(t, spec, "01_release-grpc")); !reflect.DeepEqual(got, []string{"v2:9000=20", "v1:9000=80"}) {
			t.Errorf("grpc release destinations %v", got)
		}
		if got := len(route(t, spec, "01_release-grpc").Match); got != tc.grpcMatches {
			t.Errorf("grpc release matches %d, want %d", got, tc.grpcMatches)
		}
		for _, r := range spec.Http {
			for _, d := range r.Route {
				if d.Destination.Host != "shop.shop-production.svc.cluster.local" {
					t.Errorf("%s: destination host %q", r.Name, d.Destination.Host)
				}
			}
		}
		tagged := route(t, spec, "00_tagged-v2-http")
		if got := destinations(tagged); !reflect.DeepEqual(got, []string{"v2:80=100"}) {
			t.Errorf("tagged destinations %v", got)
		}
		release := route(t, spec, "01_release-http")
		if len(tagged.Match) != len(release.Match) || len(tagged.Match) != tc.httpMatches {
			t.Fatalf("tagged matches %v, release matches %v: want the same %d blocks", matches(tagged), matches(release), tc.httpMatches)
		}
		for i, m := range tagged.Match {
			// The header name is lower-cased, as Istio requires.
			if h := m.Headers["medium-tag"]; h.GetExact() != "v2" || len(m.Headers) != 1 {
				t.Errorf("tagged match %d headers %v", i, m.Headers)
			}
			if release.Match[i].Headers != nil {
				t.Errorf("release match %d has headers %v", i, release.Match[i].Headers)
			}
			if m.Port != release.Match[i].Port || !reflect.DeepEqual(m.Gateways, release.Match[i].Gateways) {
				t.Errorf("tagged match %d %v differs from the release match %v", i, m, release.Match[i])
			}
		}
		if !reflect.DeepEqual(spec.Hosts, tc.hosts) {
			t.Errorf("hosts\n got %v\nwant %v", spec.Hosts, tc.hosts)
		}
		if !reflect.DeepEqual(spec.Gateways, tc.gateways) {
			t.Errorf("gateways %v, want %v", spec.Gateways, tc.gateways)
		}
	}

	againMesh, againIngress, _ := manifests.VirtualServices(routing(), cluster())
	if !proto.Equal(&mesh.Spec, &againMesh.Spec) || !proto.Equal(&ingress.Spec, &againIngress.Spec) {
		t.Errorf("not deterministic")
	}
}

func Test_VirtualService_Weights(t *testing.T) {
	r := routing()
	r.Releases[0].Weight, r.Releases[1].Weight = 0, 100
	r.Releases[1].Tagged = false
	vs := virtualService(t, r, cluster())
	if got := destinations(route(t, vs, "01_release-http")); !reflect.DeepEqual(got, []string{"v1:80=100"}) {
		t.Errorf("a release without weight is routed: %v", got)
	}
	// v2 has no weight but stays reachable by header; v1 is not tagged.
	if want := []string{"00_tagged-v2-grpc", "00_tagged-v2-http", "00_tagged-v2-status", "01_release-grpc", "01_release-http", "01_release-status"}; !reflect.DeepEqual(routeNames(vs), want) {
		t.Errorf("routes %v, want %v", routeNames(vs), want)
	}

	// Tagged without a header gives no header route.
	r = routing()
	r.Releases[0].TagRoutingHeader = ""
	if names := routeNames(virtualService(t, r, cluster())); slices.Contains(names, "00_tagged-v2-http") {
		t.Errorf("tagged route without a header: %v", names)
	}
}

func Test_VirtualService_NilWithoutRoutes(t *testing.T) {
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
			r := routing()
			edit(&r)
			if mesh, ingress, err := manifests.VirtualServices(r, cluster()); mesh != nil || ingress != nil || err != nil {
				t.Errorf("got %v, %v, %v; want nil, nil, nil", mesh, ingress, err)
			}
		})
	}
}

func Test_VirtualService_Matches(t *testing.T) {
	const (
		private = "istio-system/private-gateway"
		public  = "istio-system/public-gateway"
	)
	re := func(hosts ...string) string {
		for i, h := range hosts {
			hosts[i] = strings.ReplaceAll(h, ".", `\.`)
		}
		return "^(" + strings.Join(hosts, "|") + ")(:[0-9]+)?$"
	}
	privateHosts := re("shop-production.internal.example.com", "shop.example.org", "shop.internal.example.com")
	publicHosts := re("shop-production.example.com", "shop.example.com", "shop.example.org")
	httpPort := func() picchuv1alpha1.PortInfo {
		return picchuv1alpha1.PortInfo{
			Name: "http", Port: 80, IngressPort: 443, Mode: picchuv1alpha1.PortModePublic,
			Ingresses: []picchuv1alpha1.Ingress{picchuv1alpha1.IngressPrivate, picchuv1alpha1.IngressPublic},
			Hosts:     []string{"shop.example.org"},
		}
	}
	cases := map[string]struct {
		edit         func(*manifests.Routing, *picchuv1alpha1.PortInfo, *picchuv1alpha1.Cluster)
		noCluster    bool
		want         []string
		wantGateways []string
	}{
		"public default port of a target that is its fleet": {
			edit: func(*manifests.Routing, *picchuv1alpha1.PortInfo, *picchuv1alpha1.Cluster) {},
			want: []string{
				"mesh:80 //", private + ":443 " + privateHosts, private + ":80 " + privateHosts,
				public + ":443 " + publicHosts, public + ":80 " + publicHosts,
			},
			wantGateways: []string{private, public, "mesh"},
		},
		"public default port of a target that is not its fleet": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) { r.Fleet = "prod" },
			want: []string{
				"mesh:80 //",
				private + ":443 " + re("shop-production.internal.example.com", "shop.example.org"),
				private + ":80 " + re("shop-production.internal.example.com", "shop.example.org"),
				public + ":443 " + re("shop-production.example.com", "shop.example.org"),
				public + ":80 " + re("shop-production.example.com", "shop.example.org"),
			},
			wantGateways: []string{private, public, "mesh"},
		},
		"public port that is not the default gets only its own hosts": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) {
				r.DefaultIngressPorts = map[string]string{"public": "web", "private": "web"}
			},
			want: []string{
				"mesh:80 //", private + ":443 " + re("shop.example.org"), private + ":80 " + re("shop.example.org"),
				public + ":443 " + re("shop.example.org"), public + ":80 " + re("shop.example.org"),
			},
			wantGateways: []string{private, public, "mesh"},
		},
		"port with no hosts on its ingresses stays in the mesh": {
			edit: func(r *manifests.Routing, p *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) {
				r.DefaultIngressPorts = nil
				p.Hosts = nil
			},
			want:         []string{"mesh:80 //"},
			wantGateways: []string{"mesh"},
		},
		"private port on another ingress port has no port 80 match": {
			edit: func(r *manifests.Routing, p *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) {
				r.DefaultIngressPorts = map[string]string{"private": "http"}
				p.Mode, p.Ingresses, p.IngressPort = picchuv1alpha1.PortModePrivate, []picchuv1alpha1.Ingress{picchuv1alpha1.IngressPrivate}, 8443
			},
			want:         []string{"mesh:80 //", private + ":8443 " + privateHosts},
			wantGateways: []string{private, "mesh"},
		},
		"local port with hosts stays in the mesh": {
			edit: func(_ *manifests.Routing, p *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) {
				p.Mode, p.Ingresses = picchuv1alpha1.PortModeLocal, nil
			},
			want:         []string{"mesh:80 //"},
			wantGateways: []string{"mesh"},
		},
		"ingresses without default domains": {
			edit: func(_ *manifests.Routing, _ *picchuv1alpha1.PortInfo, c *picchuv1alpha1.Cluster) {
				c.Spec.Ingresses.Public.DefaultDomains, c.Spec.Ingresses.Private.DefaultDomains = nil, nil
			},
			want: []string{
				"mesh:80 //", private + ":443 " + re("shop.example.org"), private + ":80 " + re("shop.example.org"),
				public + ":443 " + re("shop.example.org"), public + ":80 " + re("shop.example.org"),
			},
			wantGateways: []string{private, public, "mesh"},
		},
		"cluster without a public gateway": {
			edit: func(_ *manifests.Routing, _ *picchuv1alpha1.PortInfo, c *picchuv1alpha1.Cluster) {
				c.Spec.Ingresses.Public = picchuv1alpha1.IngressInfo{}
			},
			want:         []string{"mesh:80 //", private + ":443 " + privateHosts, private + ":80 " + privateHosts},
			wantGateways: []string{private, "mesh"},
		},
		"no cluster": {
			edit:         func(*manifests.Routing, *picchuv1alpha1.PortInfo, *picchuv1alpha1.Cluster) {},
			noCluster:    true,
			want:         []string{"mesh:80 //"},
			wantGateways: []string{"mesh"},
		},
		// A port with neither mode nor ingresses is private (bug 12 of the original).
		"port without mode or ingresses is private": {
			edit: func(_ *manifests.Routing, p *picchuv1alpha1.PortInfo, _ *picchuv1alpha1.Cluster) {
				p.Mode, p.Ingresses = "", nil
			},
			want:         []string{"mesh:80 //", private + ":443 " + privateHosts, private + ":80 " + privateHosts},
			wantGateways: []string{private, "mesh"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := routing()
			r.Releases = []manifests.Release{{Tag: "v1", Weight: 100}}
			port := httpPort()
			c := cluster()
			tc.edit(&r, &port, c)
			r.Ports = []picchuv1alpha1.PortInfo{port}
			if tc.noCluster {
				c = nil
			}
			mesh, ingress := virtualServices(t, r, c)
			if !reflect.DeepEqual(mesh.Hosts, []string{"shop.shop-production.svc.cluster.local"}) || !reflect.DeepEqual(mesh.Gateways, []string{"mesh"}) {
				t.Errorf("mesh hosts %v, gateways %v: want the Service host alone, in the mesh alone", mesh.Hosts, mesh.Gateways)
			}
			got := matches(route(t, mesh, "01_release-http"))
			gateways := mesh.Gateways
			if ingress != nil {
				got = append(got, matches(route(t, ingress, "01_release-http"))...)
				gateways = append(slices.Clone(ingress.Gateways), gateways...)
				if slices.Contains(ingress.Gateways, "mesh") || slices.Contains(ingress.Hosts, "shop.shop-production.svc.cluster.local") {
					t.Errorf("ingress hosts %v, gateways %v: want neither the mesh nor its host", ingress.Hosts, ingress.Gateways)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("matches\n got %q\nwant %q", got, tc.want)
			}
			if !reflect.DeepEqual(gateways, tc.wantGateways) {
				t.Errorf("gateways %v, want %v", gateways, tc.wantGateways)
			}
		})
	}
}

func Test_VirtualService_AuthorityRegex(t *testing.T) {
	_, vs := virtualServices(t, routing(), cluster())
	m := route(t, vs, "01_release-http").Match[2] // public gateway, port 443
	re, err := regexp.Compile(m.GetAuthority().GetRegex())
	if err != nil {
		t.Fatal(err)
	}
	for _, authority := range []string{"shop.example.org", "shop.example.org:443", "shop-production.example.com:8080", "shop.example.com"} {
		if !re.MatchString(authority) {
			t.Errorf("%s does not match %s", re, authority)
		}
	}
	for _, authority := range []string{
		"shopxexample.org", "evil.shop.example.org", "shop.example.org.evil.com", "shop.example.org:", "shop.example.org:http",
		"shop-production.internal.example.com",
	} {
		if re.MatchString(authority) {
			t.Errorf("%s matches %s", re, authority)
		}
	}
}

func Test_VirtualService_RetriesAndTimeouts(t *testing.T) {
	vs := virtualService(t, routing(), cluster())
	for _, r := range vs.Http {
		if strings.HasSuffix(r.Name, "-http") {
			if r.Retries.GetAttempts() != 3 || r.Retries.GetPerTryTimeout().AsDuration() != 2*time.Second ||
				r.Retries.GetRetryOn() != "5xx,connect-failure" || r.Timeout.AsDuration() != 15*time.Second {
				t.Errorf("%s: retries %v timeout %v", r.Name, r.Retries, r.Timeout)
			}
		} else if r.Retries != nil || r.Timeout != nil {
			t.Errorf("%s: retries %v timeout %v, want none", r.Name, r.Retries, r.Timeout)
		}
	}

	r := routing()
	r.Ports[0].Istio.HTTP.Timeout, r.Ports[0].Istio.HTTP.Retries.PerTryTimeout = "0", "0s"
	for _, route := range virtualService(t, r, cluster()).Http {
		if route.Timeout != nil || route.Retries.GetPerTryTimeout() != nil {
			t.Errorf("%s: a zero duration is written as %v, %v; want none", route.Name, route.Timeout, route.Retries)
		}
	}

	invalid := map[string]struct {
		edit func(*picchuv1alpha1.PortIstioHTTPConfig)
		want string
	}{
		"unparsable timeout":       {func(h *picchuv1alpha1.PortIstioHTTPConfig) { h.Timeout = "soon" }, `port http: istio.http.timeout "soon"`},
		"timeout under 1ms":        {func(h *picchuv1alpha1.PortIstioHTTPConfig) { h.Timeout = "500us" }, `port http: istio.http.timeout "500us": 500µs is under Istio's minimum`},
		"unparsable perTryTimeout": {func(h *picchuv1alpha1.PortIstioHTTPConfig) { h.Retries.PerTryTimeout = "2" }, `port http: istio.http.retries.perTryTimeout "2"`},
	}
	for name, tc := range invalid {
		t.Run(name, func(t *testing.T) {
			r := routing()
			tc.edit(&r.Ports[0].Istio.HTTP)
			vs, _, err := manifests.VirtualServices(r, cluster())
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || vs != nil {
				t.Errorf("got %v, %v; want an error starting %q", vs, err, tc.want)
			}
		})
	}
}

func Test_VirtualService_Faults(t *testing.T) {
	delay := func(d string) *picchuv1alpha1.HTTPFaultInjection {
		return &picchuv1alpha1.HTTPFaultInjection{Delay: &picchuv1alpha1.FaultDelay{FixedDelay: d, Percentage: &picchuv1alpha1.Percent{Value: 50}}}
	}
	abort := func(status int32) *picchuv1alpha1.HTTPFaultInjection {
		return &picchuv1alpha1.HTTPFaultInjection{Abort: &picchuv1alpha1.FaultAbort{HTTPStatus: status, Percentage: &picchuv1alpha1.Percent{Value: 10}}}
	}
	on := func(port uint32) *picchuv1alpha1.PortSelector { return &picchuv1alpha1.PortSelector{Number: port} }
	cases := map[string]struct {
		faults []picchuv1alpha1.HTTPPortFault
		// want is the fault of each port's routes, as "delay:<d>" or "abort:<status>", "" for none.
		want map[string]string
	}{
		"no faults": {nil, map[string]string{"http": "", "grpc": "", "status": ""}},
		"all ports": {
			[]picchuv1alpha1.HTTPPortFault{{Fault: delay("5s")}},
			map[string]string{"http": "delay:5s", "grpc": "delay:5s", "status": "delay:5s"},
		},
		"one port by number": {
			[]picchuv1alpha1.HTTPPortFault{{PortSelector: on(9000), Fault: abort(503)}},
			map[string]string{"http": "", "grpc": "abort:503", "status": ""},
		},
		"a port number no port has": {
			[]picchuv1alpha1.HTTPPortFault{{PortSelector: on(9999), Fault: abort(503)}},
			map[string]string{"http": "", "grpc": "", "status": ""},
		},
		"the last match wins": {
			[]picchuv1alpha1.HTTPPortFault{
				{PortSelector: on(80), Fault: abort(500)},
				{Fault: delay("1s")},
				{PortSelector: on(80), Fault: abort(503)},
			},
			map[string]string{"http": "abort:503", "grpc": "delay:1s", "status": "delay:1s"},
		},
		// Bug 15 of the original: no nil dereference on either pointer.
		"entries without a fault or a selector": {
			[]picchuv1alpha1.HTTPPortFault{
				{Fault: delay("2s")},
				{},
				{PortSelector: on(9000)},
			},
			map[string]string{"http": "delay:2s", "grpc": "delay:2s", "status": "delay:2s"},
		},
		"a fault that injects nothing is ignored": {
			[]picchuv1alpha1.HTTPPortFault{
				{Fault: abort(500)},
				{Fault: &picchuv1alpha1.HTTPFaultInjection{
					Delay: &picchuv1alpha1.FaultDelay{Percentage: &picchuv1alpha1.Percent{Value: 100}},
					Abort: &picchuv1alpha1.FaultAbort{Percentage: &picchuv1alpha1.Percent{Value: 100}},
				}},
			},
			map[string]string{"http": "abort:500", "grpc": "abort:500", "status": "abort:500"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := routing()
			r.Faults = tc.faults
			vs := virtualService(t, r, cluster())
			for _, route := range vs.Http {
				port := route.Name[strings.LastIndex(route.Name, "-")+1:]
				if got := describeFault(route.Fault); got != tc.want[port] {
					t.Errorf("%s: fault %q, want %q", route.Name, got, tc.want[port])
				}
			}
		})
	}

	t.Run("grpc abort and percentages", func(t *testing.T) {
		r := routing()
		r.Faults = []picchuv1alpha1.HTTPPortFault{{Fault: &picchuv1alpha1.HTTPFaultInjection{
			Delay: &picchuv1alpha1.FaultDelay{FixedDelay: "250ms", Percent: 5, Percentage: &picchuv1alpha1.Percent{Value: 12.5}},
			Abort: &picchuv1alpha1.FaultAbort{GRPCStatus: "UNAVAILABLE", Percentage: &picchuv1alpha1.Percent{Value: 1.5}},
		}}}
		f := virtualService(t, r, cluster()).Http[0].Fault
		if f.GetDelay().GetFixedDelay().AsDuration() != 250*time.Millisecond || f.GetDelay().GetPercentage().GetValue() != 12.5 ||
			f.GetDelay().GetPercent() != 5 || //nolint:staticcheck // the mirror carries it
			f.GetAbort().GetGrpcStatus() != "UNAVAILABLE" || f.GetAbort().GetPercentage().GetValue() != 1.5 {
			t.Errorf("fault %v", f)
		}
	})

	t.Run("an invalid delay is an error naming the fault", func(t *testing.T) {
		r := routing()
		r.Faults = []picchuv1alpha1.HTTPPortFault{{Fault: delay("1s")}, {PortSelector: on(9000), Fault: delay("forever")}}
		vs, _, err := manifests.VirtualServices(r, cluster())
		if want := `port grpc: fault 1: delay.fixedDelay "forever"`; err == nil || !strings.HasPrefix(err.Error(), want) || vs != nil {
			t.Errorf("got %v, %v; want an error starting %q", vs, err, want)
		}
	})
}

func describeFault(f *istioapi.HTTPFaultInjection) string {
	switch {
	case f == nil:
		return ""
	case f.Delay != nil && f.Abort != nil:
		return "delay and abort"
	case f.Delay != nil:
		return "delay:" + f.Delay.GetFixedDelay().AsDuration().String()
	default:
		return fmt.Sprintf("abort:%d", f.Abort.GetHttpStatus())
	}
}

// TestIstioPlans_ApplyToARealCluster applies the Istio objects of a two-port,
// two-release app to a target API server with Istio's CRDs, which validates
// them, reads them back and checks nothing was lost or changed; applying
// them again, rebuilt, changes nothing.
func TestIstioPlans_ApplyToARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	r := routing()
	r.App = "cart"
	r.Releases[0].TrafficPolicy = fullTrafficPolicy()
	r.Faults = []picchuv1alpha1.HTTPPortFault{
		{Fault: &picchuv1alpha1.HTTPFaultInjection{Delay: &picchuv1alpha1.FaultDelay{FixedDelay: "100ms", Percentage: &picchuv1alpha1.Percent{Value: 5}}}},
		{PortSelector: &picchuv1alpha1.PortSelector{Number: 9000}, Fault: &picchuv1alpha1.HTTPFaultInjection{
			Abort: &picchuv1alpha1.FaultAbort{GRPCStatus: "UNAVAILABLE", Percentage: &picchuv1alpha1.Percent{Value: 1}},
		}},
	}
	objects := func() []client.Object {
		dr, err := manifests.DestinationRule(r)
		if err != nil {
			t.Fatal(err)
		}
		mesh, ingress, err := manifests.VirtualServices(r, cluster())
		if err != nil {
			t.Fatal(err)
		}
		return []client.Object{manifests.AppNamespace(r.App, r.Target, manifests.MeshSidecar), dr, mesh, ingress, manifests.Sidecar(r)}
	}

	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	want := objects()
	for _, obj := range want {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T: %v", obj, err)
		}
	}
	versions := map[string]string{}
	for _, obj := range want[1:] {
		got := empty(obj)
		if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatalf("reading %T: %v", obj, err)
		}
		// The applier adds its owner's marker to the object's labels.
		wantLabels := maps.Clone(obj.GetLabels())
		maps.Copy(wantLabels, c.Owner.Labels())
		if !reflect.DeepEqual(got.GetLabels(), wantLabels) {
			t.Errorf("%T labels %v, want %v", obj, got.GetLabels(), wantLabels)
		}
		if g, w := istioSpec(got), istioSpec(obj); !proto.Equal(g, w) {
			t.Errorf("stored %T spec differs\n got %v\nwant %v", obj, g, w)
		}
		versions[fmt.Sprintf("%T %s", obj, obj.GetName())] = got.GetResourceVersion()
	}

	// A new applier has no memory of what was applied, so this sends every
	// object again; identical objects leave the stored ones unchanged.
	again := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	for _, obj := range objects()[1:] {
		if err := again.Apply(ctx, obj); err != nil {
			t.Fatal(err)
		}
		got := empty(obj)
		if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		if v := versions[fmt.Sprintf("%T %s", obj, obj.GetName())]; got.GetResourceVersion() != v {
			t.Errorf("%T changed on the second apply: resourceVersion %s, was %s", obj, got.GetResourceVersion(), v)
		}
	}
}

// empty is a new object of obj's type, to read into.
func empty(obj client.Object) client.Object {
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
}

// istioSpec is the spec of an Istio object, as a proto message.
func istioSpec(obj client.Object) proto.Message {
	switch o := obj.(type) {
	case *istionetworking.DestinationRule:
		return &o.Spec
	case *istionetworking.VirtualService:
		return &o.Spec
	case *istionetworking.Sidecar:
		return &o.Spec
	}
	panic(fmt.Sprintf("not an Istio object: %T", obj))
}
