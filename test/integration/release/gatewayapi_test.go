package release_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestRouter_SwitchedToTheGatewayAPIAndRamped: v1 is released through
// Istio; v2, whose target routes with the Gateway API, takes the app over.
// On every cluster its HTTPRoute weighs v1 at 100 % before the
// VirtualService goes, no look ever finds the app without a route, then v2
// ramps step by step in the HTTPRoute, each build weighed through a Service
// of its own, and v1's Service goes once v1 has no traffic and no header
// route.
func TestRouter_SwitchedToTheGatewayAPIAndRamped(t *testing.T) {
	ctx := context.Background()
	const app = "gateway"
	create(t, build{app: app, tag: "v1", commit: 1, delay: time.Second})
	state(t, 30*time.Second, app, "v1", "released")
	routes(t, app, map[string]int32{"v1": 100})

	tl := watch(t, app, "v2")
	create(t, build{app: app, tag: "v2", commit: 2, delay: time.Second, router: picchuv1alpha1.RouterGatewayAPI})
	state(t, 30*time.Second, app, "v2", "released")
	state(t, 10*time.Second, app, "v1", "retired")
	routes(t, app, map[string]int32{"v2": 100})

	ramp := []string{"v1=100", "v1=90 v2=10", "v1=80 v2=20", "v1=60 v2=40", "v1=20 v2=80", "v2=100"}
	for _, target := range env.Targets {
		if got := tl.routesOf(target.Name); !slices.Equal(got, ramp) {
			t.Errorf("%s: routes went through %q, want %q", target.Name, got, ramp)
		}
		if n := tl.gapsOf(target.Name); n > 0 {
			t.Errorf("%s: %d looks found the app without a route", target.Name, n)
		}
		ns := app + "-production"
		kit.Eventually(t, 10*time.Second, target.Name+": the Istio objects and v1's Service gone", func() error {
			for _, obj := range []client.Object{
				&istionetworking.VirtualService{}, &istionetworking.DestinationRule{},
			} {
				if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, obj); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T: %v", obj, err)
				}
			}
			if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-v1"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("v1's Service: %v", err)
			}
			return nil
		})
		svc := &corev1.Service{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-v2"}, svc); err != nil {
			t.Fatalf("%s: v2's Service: %v", target.Name, err)
		}
		if got := svc.Spec.Selector[picchuv1alpha1.LabelPodTag]; got != "v2" {
			t.Errorf("%s: v2's Service selects tag %q", target.Name, got)
		}
		route := &gatewayv1.HTTPRoute{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app + "-http"}, route); err != nil {
			t.Fatal(err)
		}
		if refs := route.Spec.ParentRefs; len(refs) != 1 || string(refs[0].Name) != app || refs[0].Kind == nil || *refs[0].Kind != "Service" {
			t.Errorf("%s: the route's parents %v, want the app's Service", target.Name, refs)
		}
	}
}
