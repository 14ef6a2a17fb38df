package mesh

import (
	"reflect"
	"testing"

	istioapi "istio.io/api/networking/v1alpha3"
	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func route(name string, dests ...*istioapi.HTTPRouteDestination) *istioapi.HTTPRoute {
	return &istioapi.HTTPRoute{Name: name, Route: dests}
}

func dest(subset string, weight int32) *istioapi.HTTPRouteDestination {
	return &istioapi.HTTPRouteDestination{Destination: &istioapi.Destination{Host: "shop", Subset: subset}, Weight: weight}
}

func Test_releaseWeights(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes []*istioapi.HTTPRoute
		want   map[string]int32
	}{
		{"no routes", nil, nil},
		{"only tagged routes", []*istioapi.HTTPRoute{route("00_tagged-v1-http", dest("v1", 100))}, nil},
		{"first release route", []*istioapi.HTTPRoute{
			route("00_tagged-v1-http", dest("v1", 100)),
			route("01_release-http", dest("v1", 90), dest("v2", 10)),
			route("01_release-grpc", dest("v1", 30), dest("v2", 70)),
		}, map[string]int32{"v1": 90, "v2": 10}},
		{"lone destination without weight", []*istioapi.HTTPRoute{route("01_release-http", dest("v1", 0))},
			map[string]int32{"v1": 100}},
		{"destination without weight among others", []*istioapi.HTTPRoute{
			route("01_release-http", dest("v1", 100), dest("v2", 0)),
		}, map[string]int32{"v1": 100, "v2": 0}},
		{"destination without subset", []*istioapi.HTTPRoute{
			route("01_release-http", dest("v1", 50), dest("", 50)),
		}, map[string]int32{"v1": 50}},
		{"release route without destinations", []*istioapi.HTTPRoute{route("01_release-http")}, map[string]int32{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := &networkingv1.VirtualService{Spec: istioapi.VirtualService{Http: tc.routes}}
			if got := releaseWeights(vs); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("releaseWeights = %v, want %v", got, tc.want)
			}
		})
	}
}

func Test_appOf(t *testing.T) {
	labelled := &networkingv1.VirtualService{ObjectMeta: metav1.ObjectMeta{
		Name: "shop-vs", Labels: map[string]string{picchuv1alpha1.LabelApp: "shop"},
	}}
	if got := appOf(labelled); got != "shop" {
		t.Errorf("appOf(labelled) = %q, want the label's shop", got)
	}
	unlabelled := &networkingv1.VirtualService{ObjectMeta: metav1.ObjectMeta{Name: "cart"}}
	if got := appOf(unlabelled); got != "cart" {
		t.Errorf("appOf(unlabelled) = %q, want the name cart", got)
	}
}
