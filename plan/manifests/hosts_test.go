package manifests_test

import (
	"errors"
	"strings"
	"testing"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// TestRoutes_HostsOutsideTheClustersDomains: both routers refuse to route
// a port's host the cluster's ingress does not allow, with an error naming
// the port, the host's index, the cluster and the ingress, which is a
// *HostNotAllowedError; an ingress without a gateway routes nothing and
// checks nothing; a local port's hosts are never routed, so never checked.
func TestRoutes_HostsOutsideTheClustersDomains(t *testing.T) {
	cases := map[string]struct {
		edit func(*manifests.Routing, *picchuv1alpha1.Cluster)
		want string // "" for no error
	}{
		"allowed hosts": {edit: func(*manifests.Routing, *picchuv1alpha1.Cluster) {}},
		"another team's in-mesh service": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) {
				r.Ports[0].Hosts = append(r.Ports[0].Hosts, "vault.vault.svc.cluster.local")
			},
			want: `port http: hosts[1]: cluster prod-a, private ingress: host "vault.vault.svc.cluster.local" is under none`,
		},
		"a wildcard over a default domain": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) {
				r.Ports[0].Hosts = []string{"*.internal.example.com"}
			},
			want: `port http: hosts[0]: cluster prod-a, private ingress: host "*.internal.example.com" is a wildcard under default domain "internal.example.com"`,
		},
		"a wildcard under an allowed domain": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) {
				r.Ports[0].Hosts = []string{"*.shop.example.org"}
			},
		},
		"a host the public ingress alone refuses": {
			edit: func(_ *manifests.Routing, c *picchuv1alpha1.Cluster) { c.Spec.Ingresses.Public.AllowedDomains = nil },
			want: `port http: hosts[0]: cluster prod-a, public ingress: host "shop.example.org" is under none`,
		},
		"no public gateway, nothing to refuse there": {
			edit: func(_ *manifests.Routing, c *picchuv1alpha1.Cluster) {
				c.Spec.Ingresses.Public = picchuv1alpha1.IngressInfo{DefaultDomains: []string{"example.com"}}
			},
		},
		"a local port's hosts": {
			edit: func(r *manifests.Routing, _ *picchuv1alpha1.Cluster) {
				r.Ports[2].Hosts = []string{"vault.vault.svc.cluster.local"}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, c := gatewayRouting(), cluster()
			tc.edit(&r, c)
			_, _, vsErr := manifests.VirtualServices(r, c)
			_, _, gwErr := manifests.GatewayRoutes(r, c)
			for router, err := range map[string]error{"istio": vsErr, "gatewayAPI": gwErr} {
				if tc.want == "" {
					if err != nil {
						t.Errorf("%s: %v", router, err)
					}
					continue
				}
				var refused *picchuv1alpha1.HostNotAllowedError
				if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.As(err, &refused) {
					t.Errorf("%s: error %v, want a HostNotAllowedError starting %q", router, err, tc.want)
				}
			}
		})
	}
}
