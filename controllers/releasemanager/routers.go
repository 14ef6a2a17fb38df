package releasemanager

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan"
	"github.com/medium/picchu/plan/manifests"
)

// router writes the routes that split an app's traffic between its builds
// on one cluster, from the same Routing whichever it is: the decisions do
// not know which runs. Its steps apply its own objects first, then remove
// the other router's, so that a target switched from one to the other
// never leaves a build without a route: until the new routes are written,
// the old ones stay.
type router interface {
	steps(r manifests.Routing, cluster *picchuv1alpha1.Cluster) []plan.Step
}

// routerOf is the router a target's newest build asks for.
func routerOf(target *picchuv1alpha1.RevisionTarget) router {
	if target.Router == picchuv1alpha1.RouterGatewayAPI {
		return gatewayRouter{}
	}
	return istioRouter{}
}

// istioRouter routes with a DestinationRule (a subset per build), a
// VirtualService in the mesh and one on the ingress gateways
// (manifests.VirtualServices) and, with egress hosts, a Sidecar.
type istioRouter struct{}

func (istioRouter) steps(r manifests.Routing, cluster *picchuv1alpha1.Cluster) []plan.Step {
	dr, err := manifests.DestinationRule(r)
	if err != nil {
		return []plan.Step{{Op: plan.Fail, Err: err}}
	}
	mesh, ingress, err := manifests.VirtualServices(r, cluster)
	if err != nil {
		return []plan.Step{{Op: plan.Fail, Err: err}}
	}
	istio := func(kind string) client.Object { return manifests.IstioObject(r.App, r.Target, kind) }
	return append([]plan.Step{
		applyOrDelete(nilIfNil(dr), istio("DestinationRule")),
		// The ingress's first: an app whose one VirtualService served the
		// ingress too, as before, keeps its ingress routes throughout.
		applyOrDelete(nilIfNil(ingress), manifests.IngressVirtualService(r.App, r.Target)),
		applyOrDelete(nilIfNil(mesh), istio("VirtualService")),
		applyOrDelete(nilIfNil(manifests.Sidecar(r)), istio("Sidecar")),
	}, gatewayPrunes(r, nil, nil, nil)...)
}

// gatewayRouter routes with a Service per build and the Gateway API's
// HTTPRoutes and GRPCRoutes over them.
type gatewayRouter struct{}

func (gatewayRouter) steps(r manifests.Routing, cluster *picchuv1alpha1.Cluster) []plan.Step {
	httpRoutes, grpcRoutes, err := manifests.GatewayRoutes(r, cluster)
	if err != nil {
		return []plan.Step{{Op: plan.Fail, Err: err}}
	}
	const needs = "the target routes with the Gateway API (router gatewayAPI)"
	var steps []plan.Step
	var services, httpNames, grpcNames []string
	// Every build synced here and every build routed: a build's Service is
	// made as it deploys, so that its endpoints are there when it takes
	// traffic.
	tags := slices.Clone(r.Running)
	for _, rel := range r.Releases {
		if !slices.Contains(tags, rel.Tag) {
			tags = append(tags, rel.Tag)
		}
	}
	for _, tag := range tags {
		if svc := manifests.BuildService(r.App, r.Target, tag, r.Ports); svc != nil {
			steps = append(steps, plan.Step{Op: plan.Apply, Object: svc})
			services = append(services, svc.Name)
		}
	}
	for _, route := range httpRoutes {
		steps = append(steps, plan.Step{Op: plan.Apply, Object: route, NeedsKind: needs})
		httpNames = append(httpNames, route.Name)
	}
	for _, route := range grpcRoutes {
		steps = append(steps, plan.Step{Op: plan.Apply, Object: route, NeedsKind: needs})
		grpcNames = append(grpcNames, route.Name)
	}
	steps = append(steps, gatewayPrunes(r, services, httpNames, grpcNames)...)
	for _, kind := range []string{"DestinationRule", "VirtualService", "Sidecar"} {
		steps = append(steps, plan.Step{Op: plan.Remove, Object: manifests.IstioObject(r.App, r.Target, kind)})
	}
	steps = append(steps, plan.Step{Op: plan.Remove, Object: manifests.IngressVirtualService(r.App, r.Target)})
	return steps
}

// gatewayPrunes delete the app's Gateway API routes and build Services
// other than those named: routes first, so none is left pointing at a
// Service gone. A cluster that does not serve the routes' kinds has none.
func gatewayPrunes(r manifests.Routing, services, httpRoutes, grpcRoutes []string) []plan.Step {
	ns := picchuv1alpha1.AppNamespace(r.App, r.Target)
	selector := manifests.AppSelector(r.App, r.Target)
	return []plan.Step{
		{Op: plan.Prune, Namespace: ns, Selector: selector, Kinds: []schema.GroupVersionKind{manifests.HTTPRouteKind}, Keep: httpRoutes},
		{Op: plan.Prune, Namespace: ns, Selector: selector, Kinds: []schema.GroupVersionKind{manifests.GRPCRouteKind}, Keep: grpcRoutes},
		{Op: plan.Prune, Namespace: ns, Selector: manifests.BuildServiceSelector(r.App, r.Target),
			Kinds: []schema.GroupVersionKind{serviceKind}, Keep: services},
	}
}
