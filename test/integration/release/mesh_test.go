package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// waypointObjects are the objects of a namespace's waypoint.
func waypointObjects(ns string) []client.Object {
	key := func(obj client.Object) client.Object { obj.SetNamespace(ns); obj.SetName("waypoint"); return obj }
	options := &corev1.ConfigMap{}
	options.SetNamespace(ns)
	options.SetName("waypoint-options")
	return []client.Object{options, key(&gatewayv1.Gateway{}), key(&policyv1.PodDisruptionBudget{}), key(&autoscalingv2.HorizontalPodAutoscaler{})}
}

// meshLabels reads the mesh labels of app's namespace on target.
func meshLabels(ctx context.Context, target *harness.Target, app string) (string, error) {
	ns := &corev1.Namespace{}
	if err := target.Client.Get(ctx, client.ObjectKey{Name: app + "-production"}, ns); err != nil {
		return "", err
	}
	var out []string
	for _, l := range []string{"istio-injection", "istio.io/dataplane-mode", "istio.io/use-waypoint"} {
		if v, ok := ns.Labels[l]; ok {
			out = append(out, l+"="+v)
		}
	}
	return strings.Join(out, ","), nil
}

// TestMesh_AmbientWaypointAndDevRoutes: an ambient build gets an ambient
// namespace and its waypoint on every target, its pods opting out of
// injection; the cluster that enables dev routes (with the operator's
// dev-route service set) routes the dev header to that service, the other
// does not. A sidecar build that follows runs in a namespace in
// transition while both serve; once the ambient build retires, the
// namespace is back to sidecar injection and the waypoint is removed.
func TestMesh_AmbientWaypointAndDevRoutes(t *testing.T) {
	ctx := context.Background()
	const app = "meshy"
	dev, plain := env.Targets[0], env.Targets[1]
	running.Restart(t, func(o *operator.Options) {
		o.DevRoutesServiceHost, o.DevRoutesServicePort = "dev-router.dev.svc.cluster.local", 8080
	})
	setDevRoutes := func(on bool) {
		cl := &picchuv1alpha1.Cluster{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(dev.Cluster), cl); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(cl.DeepCopy())
		cl.Spec.EnableDevRoutes, cl.Spec.DevRouteTagTemplate = on, "x-dev-{{.App}}"
		if err := env.Delivery.Client.Patch(ctx, cl, patch); err != nil {
			t.Fatal(err)
		}
	}
	setDevRoutes(true)
	t.Cleanup(func() { setDevRoutes(false); running.Restart(t) })

	v1 := build{app: app, tag: "v1", commit: 1, delay: 300 * time.Millisecond}.revision()
	three := int32(3)
	v1.Spec.Targets[0].AmbientMesh = true
	v1.Spec.Targets[0].WaypointHPA = &picchuv1alpha1.WaypointHPA{MinReplicas: &three}
	if err := env.Delivery.Client.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	state(t, 30*time.Second, app, "v1", "released")
	ns := app + "-production"
	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, target.Name+": an ambient namespace with its waypoint", func() error {
			if got, err := meshLabels(ctx, target, app); err != nil || got != "istio.io/dataplane-mode=ambient,istio.io/use-waypoint=waypoint" {
				return fmt.Errorf("namespace labels %q (%v)", got, err)
			}
			for _, obj := range waypointObjects(ns) {
				if err := target.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
					return fmt.Errorf("%T: %w", obj, err)
				}
			}
			return nil
		})
		pdb := &policyv1.PodDisruptionBudget{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "waypoint"}, pdb); err != nil || pdb.Spec.MinAvailable.IntValue() != 2 {
			t.Errorf("%s: waypoint disruption budget %+v (%v), want minAvailable 2", target.Name, pdb.Spec, err)
		}
		rs := &appsv1.ReplicaSet{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "v1"}, rs); err != nil || rs.Spec.Template.Labels["sidecar.istio.io/inject"] != "false" {
			t.Errorf("%s: v1's pods labelled %v (%v), want sidecar.istio.io/inject=false", target.Name, rs.Spec.Template.Labels, err)
		}
	}
	devRoute := func(target *harness.Target) (string, error) {
		vs := &istionetworking.VirtualService{}
		if err := target.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: app}, vs); err != nil {
			return "", err
		}
		r := vs.Spec.Http[0]
		if !strings.HasPrefix(r.Name, "00_dev-") {
			return "", nil
		}
		return fmt.Sprintf("%s %v -> %s:%d", r.Name, len(r.Match[0].Headers["x-dev-"+app].GetRegex()) > 0,
			r.Route[0].Destination.Host, r.Route[0].Destination.Port.Number), nil
	}
	kit.Eventually(t, 30*time.Second, "the dev route on "+dev.Name, func() error {
		if got, err := devRoute(dev); err != nil || got != "00_dev-meshy true -> dev-router.dev.svc.cluster.local:8080" {
			return fmt.Errorf("first route %q (%v)", got, err)
		}
		return nil
	})
	if got, err := devRoute(plain); err != nil || got != "" {
		t.Errorf("%s, without dev routes: first route %q (%v)", plain.Name, got, err)
	}

	// A sidecar build: both modes while both serve, then sidecar alone.
	create(t, build{app: app, tag: "v2", commit: 2, delay: 2 * time.Second})
	percentAtLeast(t, app, "v2", 10)
	if got, err := meshLabels(ctx, dev, app); err != nil || got != "istio-injection=enabled,istio.io/dataplane-mode=ambient,istio.io/use-waypoint=waypoint" {
		t.Errorf("while v1 and v2 serve: namespace labels %q (%v), want both modes", got, err)
	}
	state(t, 60*time.Second, app, "v2", "released")
	state(t, 30*time.Second, app, "v1", "retired")
	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, target.Name+": a sidecar namespace without a waypoint", func() error {
			if got, err := meshLabels(ctx, target, app); err != nil || got != "istio-injection=enabled" {
				return fmt.Errorf("namespace labels %q (%v)", got, err)
			}
			for _, obj := range waypointObjects(ns) {
				if err := target.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%T %s still there (%v)", obj, obj.GetName(), err)
				}
			}
			return nil
		})
	}

	// Dev routes turned off on the cluster: the route goes.
	setDevRoutes(false)
	kit.Eventually(t, 30*time.Second, "no dev route on "+dev.Name, func() error {
		if got, err := devRoute(dev); err != nil || got != "" {
			return fmt.Errorf("first route %q (%v)", got, err)
		}
		return nil
	})
}
