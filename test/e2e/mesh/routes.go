package mesh

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	networkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// releaseRoutePrefix starts the name of the weighted route of each port of a
// VirtualService Picchu writes (plan/manifests/istio_routes.go).
const releaseRoutePrefix = "01_release-"

// virtualServiceList is the kind listed: networking.istio.io/v1. It is
// listed as unstructured objects, so that the clusters' clients need not know
// the kind: Picchu's scheme (operator.NewScheme) only knows v1alpha3, which the
// API server serves from the same objects.
var virtualServiceList = schema.GroupVersionKind{
	Group: "networking.istio.io", Version: "v1", Kind: "VirtualServiceList",
}

// appWeights are the weights of an app's tags, in percent, by app and tag.
type appWeights map[string]map[string]int32

// routes are the release routes of a cluster's apps: the weights of each
// app's tags, and the namespace of each app's route, where the pods it
// sends to are (Picchu writes both in the app's namespace).
type routes struct {
	weights    appWeights
	namespaces map[string]string // by app
}

func newRoutes() routes {
	return routes{weights: appWeights{}, namespaces: map[string]string{}}
}

// set records the weights of app's route in namespace.
func (r routes) set(app, namespace string, tags map[string]int32) {
	r.weights[app] = tags
	r.namespaces[app] = namespace
}

// readRoutes returns the release route of each app on a cluster: its
// VirtualService's (readIstioWeights) and, for an app that has none, its
// Gateway API HTTPRoute's (readGatewayWeights), both read at once. When
// both fail, the VirtualServices' error is the one returned.
func readRoutes(ctx context.Context, c client.Client) (routes, error) {
	var gateway routes
	var gatewayErr error
	var wg sync.WaitGroup
	wg.Go(func() { gateway, gatewayErr = readGatewayWeights(ctx, c) })
	out, err := readIstioWeights(ctx, c)
	wg.Wait()
	if err != nil {
		return routes{}, err
	}
	if gatewayErr != nil {
		return routes{}, gatewayErr
	}
	for app, tags := range gateway.weights {
		if _, ok := out.weights[app]; !ok {
			out.set(app, gateway.namespaces[app], tags)
		}
	}
	return out, nil
}

// httpRouteList is the Gateway API's HTTPRoute, listed as unstructured.
var httpRouteList = schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRouteList"}

// readGatewayWeights lists every HTTPRoute on a cluster, and the build
// Services, and returns the weights of each app's release rule (the first
// rule without header matches, of the app's routes in namespace/name
// order), by the tag of each Service it weighs; the two are listed at
// once. A cluster that does not serve HTTPRoutes has none.
func readGatewayWeights(ctx context.Context, c client.Client) (routes, error) {
	services := &corev1.ServiceList{}
	var servicesErr error
	var wg sync.WaitGroup
	wg.Go(func() { servicesErr = c.List(ctx, services, client.HasLabels{manifests.LabelBuildService}) })
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(httpRouteList)
	err := c.List(ctx, list)
	wg.Wait()
	if err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return newRoutes(), nil
		}
		return routes{}, fmt.Errorf("listing HTTPRoutes: %w", err)
	}
	if servicesErr != nil {
		return routes{}, fmt.Errorf("listing build Services: %w", servicesErr)
	}
	tags := map[string]string{}
	for _, svc := range services.Items {
		tags[svc.Namespace+"/"+svc.Name] = svc.Labels[picchuv1alpha1.LabelTag]
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := &list.Items[i], &list.Items[j]
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	})
	out := newRoutes()
	for i := range list.Items {
		u := &list.Items[i]
		app := u.GetLabels()[picchuv1alpha1.LabelApp]
		if _, seen := out.weights[app]; seen || app == "" {
			continue
		}
		route := &gatewayv1.HTTPRoute{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, route); err != nil {
			return routes{}, fmt.Errorf("decoding HTTPRoute %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		if w := ruleWeights(route, tags); w != nil {
			out.set(app, route.Namespace, w)
		}
	}
	return out, nil
}

// ruleWeights are the weights by tag of an HTTPRoute's first rule without
// header matches, or nil when it has none. A backend weighs 1 when it
// states no weight, as the Gateway API defaults it; a backend that is not
// a build Service names no tag and is left out.
func ruleWeights(route *gatewayv1.HTTPRoute, tags map[string]string) map[string]int32 {
	for _, rule := range route.Spec.Rules {
		if slices.ContainsFunc(rule.Matches, func(m gatewayv1.HTTPRouteMatch) bool { return len(m.Headers) > 0 }) {
			continue
		}
		var total int32
		for _, ref := range rule.BackendRefs {
			total += ptr.Deref(ref.Weight, 1)
		}
		out := map[string]int32{}
		for _, ref := range rule.BackendRefs {
			ns := route.Namespace
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			tag, ok := tags[ns+"/"+string(ref.Name)]
			if !ok || total <= 0 {
				continue
			}
			// In percent, as the VirtualService's weights are.
			out[tag] += ptr.Deref(ref.Weight, 1) * 100 / total
		}
		return out
	}
	return nil
}

// readIstioWeights lists every VirtualService on a cluster, in all
// namespaces, and returns the weights of each app's release route. When two
// VirtualServices name the same app, the first in namespace/name order
// wins.
func readIstioWeights(ctx context.Context, c client.Client) (routes, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(virtualServiceList)
	if err := c.List(ctx, list); err != nil {
		return routes{}, fmt.Errorf("listing VirtualServices: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := &list.Items[i], &list.Items[j]
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	})
	out := newRoutes()
	for i := range list.Items {
		vs, err := decodeVirtualService(&list.Items[i])
		if err != nil {
			return routes{}, err
		}
		app := appOf(vs)
		if _, seen := out.weights[app]; seen {
			continue
		}
		if tags := releaseWeights(vs); tags != nil {
			out.set(app, vs.Namespace, tags)
		}
	}
	return out, nil
}

// decodeVirtualService converts a listed object to the typed VirtualService,
// through JSON, as the spec's protobuf types decode themselves from it.
func decodeVirtualService(u *unstructured.Unstructured) (*networkingv1.VirtualService, error) {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding VirtualService %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	vs := &networkingv1.VirtualService{}
	if err := json.Unmarshal(data, vs); err != nil {
		return nil, fmt.Errorf("decoding VirtualService %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return vs, nil
}

// appOf returns the app a VirtualService routes to: its app label, or its
// name, which Picchu sets to the app's.
func appOf(vs *networkingv1.VirtualService) string {
	if app := vs.Labels[picchuv1alpha1.LabelApp]; app != "" {
		return app
	}
	return vs.Name
}

// releaseWeights returns the weights by tag of the first release route of a
// VirtualService (routes are sorted, and every port's release route carries
// the same weights), or nil when it has none. As in Istio, a lone
// destination without a weight takes all the traffic. Destinations without
// a subset name no tag and are left out.
func releaseWeights(vs *networkingv1.VirtualService) map[string]int32 {
	for _, route := range vs.Spec.GetHttp() {
		if !strings.HasPrefix(route.GetName(), releaseRoutePrefix) {
			continue
		}
		dests := route.GetRoute()
		tags := make(map[string]int32, len(dests))
		for _, d := range dests {
			tag := d.GetDestination().GetSubset()
			if tag == "" {
				continue
			}
			weight := d.GetWeight()
			if len(dests) == 1 && weight == 0 {
				weight = 100
			}
			tags[tag] += weight
		}
		return tags
	}
	return nil
}
