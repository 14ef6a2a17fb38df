package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// The Gateway API routes an app's traffic as Istio's VirtualService does,
// with what the API's standard channel can say: where Istio splits one
// Service into subsets by pod label, the Gateway API weighs Services, so
// every build has a Service of its own (BuildService), and each port has an
// HTTPRoute (a GRPCRoute for a gRPC port) per parent: the app's Service for
// traffic inside the cluster (GAMMA) and each ingress Gateway the port is
// exposed on, with that ingress's hosts.

// LabelBuildService marks the Services of builds, which the Gateway API's
// routes weigh, apart from the app's own Service and any other.
const LabelBuildService = "picchu.medium.engineering/build-service"

// The kinds of the Gateway API's routes.
var (
	HTTPRouteKind = gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute")
	GRPCRouteKind = gatewayv1.SchemeGroupVersion.WithKind("GRPCRoute")
)

// BuildServiceSelector selects the build Services of an app in a target.
func BuildServiceSelector(app, target string) map[string]string {
	l := appLabels(app, target)
	l[LabelBuildService] = "true"
	return l
}

// BuildServiceName names the Service of the build tag of app: "<app>-<tag>"
// when that is a valid Service name, otherwise a name made from it (its
// dots as dashes, cut short) and a hash of the tag, so that two tags never
// share one.
func BuildServiceName(app, tag string) string {
	name := app + "-" + tag
	if len(validation.IsDNS1035Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(tag))
	suffix := "-" + hex.EncodeToString(sum[:])[:8]
	name = strings.ReplaceAll(name, ".", "-")
	if keep := validation.DNS1035LabelMaxLength - len(suffix); len(name) > keep {
		name = strings.TrimRight(name[:keep], "-")
	}
	return name + suffix
}

// BuildService is the Service of one build: the app's ports, selecting the
// build's pods by their tag label. It is nil when there are no ports.
func BuildService(app, target, tag string, ports []picchuv1alpha1.PortInfo) *corev1.Service {
	servicePorts := uniqueServicePorts(ports)
	if len(servicePorts) == 0 {
		return nil
	}
	labels := tagLabels(app, target, tag)
	labels[LabelBuildService] = "true"
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: BuildServiceName(app, tag), Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: labels,
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: target, picchuv1alpha1.LabelPodTag: tag},
			Ports:    servicePorts,
		},
	}
}

// GatewayRoutes are the app's Gateway API routes on a cluster: per port, one
// route inside the cluster (its parent the app's Service) and one per
// ingress it is exposed on whose Gateway the cluster names, each with a
// rule per tagged build matching its tag header and a rule weighing the
// builds with traffic, and first, on a cluster with dev routes, a rule
// sending requests with the dev header to the developer service. A port
// named "grpc" or "grpc-…" (Istio's convention for gRPC) gets GRPCRoutes,
// the others HTTPRoutes. What the standard channel cannot say (a port's
// retries, its faults, a gRPC port's timeout) is refused, naming the
// field, rather than dropped.
func GatewayRoutes(r Routing, cluster *picchuv1alpha1.Cluster) ([]*gatewayv1.HTTPRoute, []*gatewayv1.GRPCRoute, error) {
	var httpRoutes []*gatewayv1.HTTPRoute
	var grpcRoutes []*gatewayv1.GRPCRoute
	dev, err := r.gatewayDevRoute(cluster)
	if err != nil {
		return nil, nil, err
	}
	for i := range r.Ports {
		p := &r.Ports[i]
		timeout, err := r.gatewayPolicy(p)
		if err != nil {
			return nil, nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		parents, err := r.gatewayParents(p, cluster)
		if err != nil {
			return nil, nil, err
		}
		for _, parent := range parents {
			meta := r.objectMeta()
			meta.Name = r.App + "-" + p.Name + parent.suffix
			if isGRPC(p) {
				if route := r.grpcRoute(p, parent, meta, dev); route != nil {
					grpcRoutes = append(grpcRoutes, route)
				}
				continue
			}
			if route := r.httpRoute(p, parent, meta, timeout, dev); route != nil {
				httpRoutes = append(httpRoutes, route)
			}
		}
	}
	return httpRoutes, grpcRoutes, nil
}

// gatewayDev is where dev routes send: the header that asks for them, and
// the developer service.
type gatewayDev struct {
	header  string
	backend gatewayv1.BackendRef
}

// gatewayDevRoute is the dev route of a cluster that enables them, when the
// developer service is set, as VirtualService's devRoute: nil otherwise. The
// service is named "<service>.<namespace>[.svc[.<domain>]]" (a Service,
// which a route can weigh); another host is an error naming the flag. A
// route in the app's namespace may send to a Service of another namespace
// only where a ReferenceGrant there allows it (the developer service's
// owners grant it).
func (r Routing) gatewayDevRoute(cluster *picchuv1alpha1.Cluster) (*gatewayDev, error) {
	if cluster == nil || !cluster.Spec.EnableDevRoutes || r.DevRoutes.Host == "" || r.DevRoutes.Port <= 0 {
		return nil, nil
	}
	header, err := cluster.DevRouteHeader(r.App, r.Target, r.Fleet)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	parts := strings.Split(r.DevRoutes.Host, ".")
	if len(parts) < 2 || (len(parts) > 2 && parts[2] != "svc") || len(validation.IsDNS1035Label(parts[0])) > 0 {
		return nil, fmt.Errorf("--dev-routes-service-host %q: the Gateway API routes to a Service, named <service>.<namespace>[.svc.cluster.local]", r.DevRoutes.Host)
	}
	return &gatewayDev{header: header, backend: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Name: gatewayv1.ObjectName(parts[0]), Namespace: ptr.To(gatewayv1.Namespace(parts[1])), Port: ptr.To(int32(r.DevRoutes.Port)),
	}}}, nil
}

// isGRPC says a port carries gRPC, by Istio's naming convention.
func isGRPC(p *picchuv1alpha1.PortInfo) bool {
	return p.Name == "grpc" || strings.HasPrefix(p.Name, "grpc-")
}

// gatewayParent is where a port's route attaches, and the hosts it serves
// there (none inside the cluster).
type gatewayParent struct {
	suffix    string // of the route's name: "" inside the cluster, "-<ingress>" on an ingress
	refs      []gatewayv1.ParentReference
	hostnames []gatewayv1.Hostname
}

// gatewayParents are the port's parents: the app's Service at the port's
// number, and each ingress Gateway ("<namespace>/<name>") it is exposed on,
// at its ingress port (any port for 443), when the ingress has hosts for
// it.
func (r Routing) gatewayParents(p *picchuv1alpha1.PortInfo, cluster *picchuv1alpha1.Cluster) ([]gatewayParent, error) {
	out := []gatewayParent{{refs: []gatewayv1.ParentReference{{
		Group: ptr.To(gatewayv1.Group("")), Kind: ptr.To(gatewayv1.Kind("Service")),
		Name: gatewayv1.ObjectName(r.App), Port: ptr.To(p.Port),
	}}}}
	exposed, err := r.exposedIngresses(p, cluster)
	if err != nil {
		return nil, err
	}
	for _, ei := range exposed {
		namespace, name, found := strings.Cut(ei.gateway, "/")
		if !found {
			namespace, name = "", ei.gateway
		}
		ref := gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}
		if p.IngressPort != 443 {
			// On 443 the route takes every listener of the Gateway that
			// serves its hosts: plain HTTP on 80 too, as the
			// VirtualService matches both. Two references to one Gateway
			// would each need a listener's name (sectionName).
			ref.Port = ptr.To(p.IngressPort)
		}
		if namespace != "" {
			ref.Namespace = ptr.To(gatewayv1.Namespace(namespace))
		}
		parent := gatewayParent{suffix: "-" + string(ei.ingress), refs: []gatewayv1.ParentReference{ref}}
		for _, h := range ei.hosts {
			parent.hostnames = append(parent.hostnames, gatewayv1.Hostname(h))
		}
		out = append(out, parent)
	}
	return out, nil
}

// gatewayPolicy is the port's request timeout, in the Gateway API's form;
// its retries and faults, and a gRPC port's timeout, are refused.
func (r Routing) gatewayPolicy(p *picchuv1alpha1.PortInfo) (*gatewayv1.Duration, error) {
	if p.Istio.HTTP.Retries != nil {
		return nil, fmt.Errorf("istio.http.retries: the Gateway API's standard channel has no retries; route this target through Istio to keep them")
	}
	for i, f := range r.Faults {
		if f.PortSelector == nil || int64(f.PortSelector.Number) == int64(p.Port) {
			return nil, fmt.Errorf("fault %d: the Gateway API has no fault injection; route this target through Istio to inject faults", i)
		}
	}
	d, err := parseRouteDuration(p.Istio.HTTP.Timeout)
	if err == nil && d != nil && isGRPC(p) {
		return nil, fmt.Errorf("istio.http.timeout: the Gateway API's GRPCRoute has no timeout; route this target through Istio to keep it")
	}
	if err != nil || d == nil {
		if err != nil {
			err = fmt.Errorf("istio.http.timeout %q: %w", p.Istio.HTTP.Timeout, err)
		}
		return nil, err
	}
	return ptr.To(gatewayDuration(d.AsDuration())), nil
}

// gatewayDuration writes d as the Gateway API's durations are written
// (GEP-2257): hours, minutes, seconds and milliseconds, each at most five
// digits; a part under a millisecond is rounded up to one.
func gatewayDuration(d time.Duration) gatewayv1.Duration {
	if d <= 0 {
		return "0s"
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	var sb strings.Builder
	for _, u := range []struct {
		unit string
		ms   time.Duration
	}{{"h", 3600_000}, {"m", 60_000}, {"s", 1000}, {"ms", 1}} {
		if n := ms / u.ms; n > 0 {
			fmt.Fprintf(&sb, "%d%s", n, u.unit)
			ms -= n * u.ms
		}
	}
	return gatewayv1.Duration(sb.String())
}

// backendRef sends a build's share of a port to its Service.
func (r Routing) backendRef(p *picchuv1alpha1.PortInfo, tag string, weight int32) gatewayv1.BackendRef {
	return gatewayv1.BackendRef{
		BackendObjectReference: gatewayv1.BackendObjectReference{
			Name: gatewayv1.ObjectName(BuildServiceName(r.App, tag)), Port: ptr.To(p.Port),
		},
		Weight: ptr.To(weight),
	}
}

// weighted are the backends of the builds with traffic, by weight.
func (r Routing) weighted(p *picchuv1alpha1.PortInfo) []gatewayv1.BackendRef {
	var out []gatewayv1.BackendRef
	for _, rel := range r.Releases {
		if rel.Weight > 0 {
			out = append(out, r.backendRef(p, rel.Tag, rel.Weight))
		}
	}
	return out
}

// headerRouted are the builds that take requests carrying their tag in
// their header.
func (r Routing) headerRouted() []Release {
	var out []Release
	for _, rel := range r.Releases {
		if rel.Tagged && rel.TagRoutingHeader != "" {
			out = append(out, rel)
		}
	}
	return out
}

// httpRoute is the port's HTTPRoute at parent: nil when no build takes
// its traffic.
func (r Routing) httpRoute(p *picchuv1alpha1.PortInfo, parent gatewayParent, meta metav1.ObjectMeta, timeout *gatewayv1.Duration, dev *gatewayDev) *gatewayv1.HTTPRoute {
	prefix := func() *gatewayv1.HTTPPathMatch {
		return &gatewayv1.HTTPPathMatch{Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/")}
	}
	rule := func(match gatewayv1.HTTPRouteMatch, refs []gatewayv1.BackendRef) gatewayv1.HTTPRouteRule {
		out := gatewayv1.HTTPRouteRule{Matches: []gatewayv1.HTTPRouteMatch{match}}
		for _, ref := range refs {
			out.BackendRefs = append(out.BackendRefs, gatewayv1.HTTPBackendRef{BackendRef: ref})
		}
		if timeout != nil {
			out.Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(*timeout)}
		}
		return out
	}
	var rules []gatewayv1.HTTPRouteRule
	for _, rel := range r.headerRouted() {
		rules = append(rules, rule(gatewayv1.HTTPRouteMatch{Path: prefix(), Headers: []gatewayv1.HTTPHeaderMatch{{
			Type: ptr.To(gatewayv1.HeaderMatchExact), Name: gatewayv1.HTTPHeaderName(rel.TagRoutingHeader), Value: rel.Tag,
		}}}, []gatewayv1.BackendRef{r.backendRef(p, rel.Tag, 1)}))
	}
	if weighted := r.weighted(p); len(weighted) > 0 {
		if dev != nil {
			// The dev header present, any value: before the weights.
			rules = append([]gatewayv1.HTTPRouteRule{rule(gatewayv1.HTTPRouteMatch{Path: prefix(), Headers: []gatewayv1.HTTPHeaderMatch{{
				Type: ptr.To(gatewayv1.HeaderMatchRegularExpression), Name: gatewayv1.HTTPHeaderName(dev.header), Value: ".*",
			}}}, []gatewayv1.BackendRef{dev.backend})}, rules...)
		}
		rules = append(rules, rule(gatewayv1.HTTPRouteMatch{Path: prefix()}, weighted))
	}
	if len(rules) == 0 {
		return nil
	}
	return &gatewayv1.HTTPRoute{
		ObjectMeta: meta,
		Spec: gatewayv1.HTTPRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent.refs},
			Hostnames:       parent.hostnames,
			Rules:           rules,
		},
	}
}

// grpcRoute is the port's GRPCRoute at parent: nil when no build takes
// its traffic.
func (r Routing) grpcRoute(p *picchuv1alpha1.PortInfo, parent gatewayParent, meta metav1.ObjectMeta, dev *gatewayDev) *gatewayv1.GRPCRoute {
	rule := func(matches []gatewayv1.GRPCRouteMatch, refs []gatewayv1.BackendRef) gatewayv1.GRPCRouteRule {
		out := gatewayv1.GRPCRouteRule{Matches: matches}
		for _, ref := range refs {
			out.BackendRefs = append(out.BackendRefs, gatewayv1.GRPCBackendRef{BackendRef: ref})
		}
		return out
	}
	var rules []gatewayv1.GRPCRouteRule
	for _, rel := range r.headerRouted() {
		rules = append(rules, rule([]gatewayv1.GRPCRouteMatch{{Headers: []gatewayv1.GRPCHeaderMatch{{
			Type: ptr.To(gatewayv1.GRPCHeaderMatchExact), Name: gatewayv1.GRPCHeaderName(rel.TagRoutingHeader), Value: rel.Tag,
		}}}}, []gatewayv1.BackendRef{r.backendRef(p, rel.Tag, 1)}))
	}
	if weighted := r.weighted(p); len(weighted) > 0 {
		if dev != nil {
			rules = append([]gatewayv1.GRPCRouteRule{rule([]gatewayv1.GRPCRouteMatch{{Headers: []gatewayv1.GRPCHeaderMatch{{
				Type: ptr.To(gatewayv1.GRPCHeaderMatchRegularExpression), Name: gatewayv1.GRPCHeaderName(dev.header), Value: ".*",
			}}}}, []gatewayv1.BackendRef{dev.backend})}, rules...)
		}
		rules = append(rules, rule(nil, weighted))
	}
	if len(rules) == 0 {
		return nil
	}
	return &gatewayv1.GRPCRoute{
		ObjectMeta: meta,
		Spec: gatewayv1.GRPCRouteSpec{
			CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: parent.refs},
			Hostnames:       parent.hostnames,
			Rules:           rules,
		},
	}
}
