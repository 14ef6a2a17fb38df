package plan_test

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	istioapi "istio.io/api/networking/v1alpha3"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/plan"
)

// routing is a realistic app: a public HTTP port with retries and a timeout,
// a private gRPC port and a mesh-only status port; a new build at 20% and
// the old one at 80%, both routable by header.
func routing() plan.Routing {
	return plan.Routing{
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
		Releases: []plan.Release{
			{Tag: "v2", Weight: 20, TagRoutingHeader: "Medium-Tag", Tagged: true, TrafficPolicy: &picchuv1alpha1.TrafficPolicy{
				TLS: &picchuv1alpha1.ClientTLSSettings{Mode: 3},
			}},
			{Tag: "v1", Weight: 80, TagRoutingHeader: "Medium-Tag", Tagged: true},
		},
		EgressHosts: []string{"./*", "istio-system/*"},
	}
}

func Test_DestinationRule(t *testing.T) {
	dr, err := plan.DestinationRule(routing())
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

	again, _ := plan.DestinationRule(routing())
	if !proto.Equal(&dr.Spec, &again.Spec) {
		t.Errorf("not deterministic")
	}

	r := routing()
	r.Releases = nil
	if dr, err := plan.DestinationRule(r); dr != nil || err != nil {
		t.Errorf("no releases: %v, %v; want nil, nil", dr, err)
	}
}

func Test_Sidecar(t *testing.T) {
	sc := plan.Sidecar(routing())
	if sc.Name != "shop" || sc.Namespace != "shop-production" || sc.Labels[picchuv1alpha1.LabelApp] != "shop" {
		t.Errorf("metadata %s/%s %v", sc.Namespace, sc.Name, sc.Labels)
	}
	if len(sc.Spec.Egress) != 1 || !reflect.DeepEqual(sc.Spec.Egress[0].Hosts, []string{"./*", "istio-system/*"}) {
		t.Errorf("egress %v", sc.Spec.Egress)
	}
	r := routing()
	r.EgressHosts = nil
	if sc := plan.Sidecar(r); sc != nil {
		t.Errorf("no egress hosts: %v, want nil", sc)
	}
}
