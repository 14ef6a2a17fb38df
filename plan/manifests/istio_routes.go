package manifests

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	istioapi "istio.io/api/networking/v1alpha3"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Route name prefixes. Routes are sorted by name, so tagged routes, which
// match a header, come before the release routes they would otherwise shadow.
const (
	devRoutePrefix     = "00_dev-"
	taggedRoutePrefix  = "00_tagged-"
	releaseRoutePrefix = "01_release-"
)

// IngressVirtualServiceSuffix ends the name of the app's VirtualService on
// its cluster's ingress gateways: "<app>-ingress".
const IngressVirtualServiceSuffix = "-ingress"

// VirtualServices are the app's two VirtualServices, each per port with a
// header route to each tagged release and a weighted route over the
// releases with traffic. mesh ("<app>") is bound to the mesh alone and
// routes the app's Service host alone: a port's hosts never reach the
// sidecars, where they would take in-mesh traffic meant for whoever owns
// those names. ingress ("<app>-ingress") is bound to the cluster's ingress
// gateways, for the hosts each port has there, matched by authority. Each
// is nil when it has no routes, so the caller deletes a stale one. A host
// the cluster's ingress does not allow (IngressInfo.HostRefused) is an
// error naming the port, the host and the cluster.
func VirtualServices(r Routing, cluster *picchuv1alpha1.Cluster) (mesh, ingress *istionetworking.VirtualService, err error) {
	var meshRoutes, ingressRoutes []*istioapi.HTTPRoute
	var hosts, gateways []string
	for i := range r.Ports {
		p := &r.Ports[i]
		m, err := r.portMatches(p, cluster)
		if err != nil {
			return nil, nil, err
		}
		policy, err := r.portPolicy(p)
		if err != nil {
			return nil, nil, fmt.Errorf("port %s: %w", p.Name, err)
		}
		meshRoutes = append(meshRoutes, r.portRoutes(p, m.mesh, policy)...)
		if len(m.ingress) > 0 {
			ingressRoutes = append(ingressRoutes, r.portRoutes(p, m.ingress, policy)...)
			hosts = append(hosts, m.hosts...)
			gateways = append(gateways, m.gateways...)
		}
	}
	host := meshHost(r.App, r.Target)
	if mesh, err = r.virtualService(cluster, r.App, []string{host}, []string{meshGateway}, meshRoutes); err != nil {
		return nil, nil, err
	}
	if ingress, err = r.virtualService(cluster, r.App+IngressVirtualServiceSuffix, sortedSet(hosts), sortedSet(gateways), ingressRoutes); err != nil {
		return nil, nil, err
	}
	return mesh, ingress, nil
}

// virtualService is the VirtualService name of the routes, with the dev
// route over them, on hosts and gateways; nil without routes.
func (r Routing) virtualService(cluster *picchuv1alpha1.Cluster, name string, hosts, gateways []string, routes []*istioapi.HTTPRoute) (*istionetworking.VirtualService, error) {
	if len(routes) == 0 {
		return nil, nil
	}
	dev, err := r.devRoute(cluster, routes)
	if err != nil {
		return nil, err
	}
	if dev != nil {
		routes = append(routes, dev)
	}
	slices.SortFunc(routes, func(a, b *istioapi.HTTPRoute) int { return strings.Compare(a.Name, b.Name) })
	meta := r.objectMeta()
	meta.Name = name
	return &istionetworking.VirtualService{
		ObjectMeta: meta,
		Spec:       istioapi.VirtualService{Hosts: hosts, Gateways: gateways, Http: routes},
	}, nil
}

// portMatchSet is where a port's traffic comes from: its match block in
// the mesh, and those of the ingresses with the hosts and gateways they
// name.
type portMatchSet struct {
	mesh, ingress   []*istioapi.HTTPMatchRequest
	hosts, gateways []string
}

// portMatches matches the port's traffic from the mesh and from each ingress
// that routes it (exposedIngresses).
func (r Routing) portMatches(p *picchuv1alpha1.PortInfo, cluster *picchuv1alpha1.Cluster) (portMatchSet, error) {
	set := portMatchSet{mesh: []*istioapi.HTTPMatchRequest{{
		Gateways: []string{meshGateway},
		Port:     uint32(p.Port),
		Uri:      &istioapi.StringMatch{MatchType: &istioapi.StringMatch_Prefix{Prefix: "/"}},
	}}}
	exposed, err := r.exposedIngresses(p, cluster)
	if err != nil {
		return set, err
	}
	for _, ei := range exposed {
		gateway, hosts := ei.gateway, ei.hosts
		authority := &istioapi.StringMatch{MatchType: &istioapi.StringMatch_Regex{Regex: authorityRegex(hosts)}}
		ports := []int32{p.IngressPort}
		if p.IngressPort == 443 {
			// Plain HTTP on the same hosts, for gateways that terminate TLS or redirect.
			ports = append(ports, 80)
		}
		for _, port := range ports {
			set.ingress = append(set.ingress, &istioapi.HTTPMatchRequest{
				Gateways: []string{gateway}, Port: uint32(port), Authority: proto.Clone(authority).(*istioapi.StringMatch),
			})
		}
		set.hosts = append(set.hosts, hosts...)
		set.gateways = append(set.gateways, gateway)
	}
	return set, nil
}

// exposedIngress is an ingress that routes a port on a cluster: its
// gateway, and the port's hosts there.
type exposedIngress struct {
	ingress picchuv1alpha1.Ingress
	gateway string
	hosts   []string
}

// exposedIngresses are the ingresses that route the port on the cluster:
// those it is exposed on whose gateway the cluster configures, and that
// have hosts for it. An ingress with none is left out: a route on it
// without an authority or hostnames would take all of the gateway's
// traffic on that port. A port's host the ingress does not allow is an
// error naming the port, the host, the cluster and the ingress.
func (r Routing) exposedIngresses(p *picchuv1alpha1.PortInfo, cluster *picchuv1alpha1.Cluster) ([]exposedIngress, error) {
	if cluster == nil {
		return nil, nil
	}
	var out []exposedIngress
	for _, ingress := range picchuv1alpha1.Ingresses() {
		info := cluster.Spec.Ingresses.Of(ingress)
		if info.Gateway == "" || !p.ExposedOn(ingress) {
			continue
		}
		for k, host := range p.Hosts {
			if err := info.HostRefused(host); err != nil {
				return nil, fmt.Errorf("port %s: hosts[%d]: cluster %s, %s ingress: %w", p.Name, k, cluster.Name, ingress, err)
			}
		}
		if hosts := r.ingressHosts(p, ingress, info.DefaultDomains); len(hosts) > 0 {
			out = append(out, exposedIngress{ingress: ingress, gateway: info.Gateway, hosts: hosts})
		}
	}
	return out, nil
}

// ingressHosts are the hosts routed to the port on an ingress: the port's
// own and, on the ingress's default port only, "<namespace>.<domain>" for
// each default domain, plus "<app>.<domain>" when the target is its fleet.
func (r Routing) ingressHosts(p *picchuv1alpha1.PortInfo, ingress picchuv1alpha1.Ingress, domains []string) []string {
	hosts := slices.Clone(p.Hosts)
	if r.DefaultIngressPorts[string(ingress)] == p.Name {
		for _, domain := range domains {
			hosts = append(hosts, picchuv1alpha1.AppNamespace(r.App, r.Target)+"."+domain)
			if r.Target == r.Fleet {
				hosts = append(hosts, r.App+"."+domain)
			}
		}
	}
	return sortedSet(hosts)
}

// authorityRegex matches an authority that is one of hosts, literally, with
// an optional port: ^(a\.example\.com|b\.example\.com)(:[0-9]+)?$.
func authorityRegex(hosts []string) string {
	quoted := make([]string, len(hosts))
	for i, h := range hosts {
		quoted[i] = regexp.QuoteMeta(h)
	}
	return "^(" + strings.Join(quoted, "|") + ")(:[0-9]+)?$"
}

// routePolicy is what every route of a port carries besides its matches and destinations.
type routePolicy struct {
	retries *istioapi.HTTPRetry
	timeout *durationpb.Duration
	fault   *istioapi.HTTPFaultInjection
}

// portPolicy reads the port's retries and timeout and picks its fault: the
// last one that selects the port's number or every port.
func (r Routing) portPolicy(p *picchuv1alpha1.PortInfo) (routePolicy, error) {
	var policy routePolicy
	var err error
	cfg := p.Istio.HTTP
	if policy.timeout, err = parseRouteDuration(cfg.Timeout); err != nil {
		return policy, fmt.Errorf("istio.http.timeout %q: %w", cfg.Timeout, err)
	}
	if rt := cfg.Retries; rt != nil {
		policy.retries = &istioapi.HTTPRetry{Attempts: rt.Attempts, RetryOn: rt.RetryOn}
		if policy.retries.PerTryTimeout, err = parseRouteDuration(rt.PerTryTimeout); err != nil {
			return policy, fmt.Errorf("istio.http.retries.perTryTimeout %q: %w", rt.PerTryTimeout, err)
		}
	}
	for i, f := range r.Faults {
		if f.PortSelector != nil && int64(f.PortSelector.Number) != int64(p.Port) {
			continue
		}
		fault, err := convertFault(f.Fault)
		if err != nil {
			return policy, fmt.Errorf("fault %d: %w", i, err)
		}
		if fault != nil {
			policy.fault = fault
		}
	}
	return policy, nil
}

// portRoutes are the port's tagged routes and its release route.
func (r Routing) portRoutes(p *picchuv1alpha1.PortInfo, matches []*istioapi.HTTPMatchRequest, policy routePolicy) []*istioapi.HTTPRoute {
	var routes []*istioapi.HTTPRoute
	for _, rel := range r.Releases {
		if !rel.Tagged || rel.TagRoutingHeader == "" {
			continue
		}
		// Header names are case-insensitive; Istio wants them lower case.
		header := strings.ToLower(rel.TagRoutingHeader)
		tagged := cloneMatches(matches)
		for _, m := range tagged {
			m.Headers = map[string]*istioapi.StringMatch{header: {MatchType: &istioapi.StringMatch_Exact{Exact: rel.Tag}}}
		}
		routes = append(routes, policy.route(taggedRoutePrefix+rel.Tag+"-"+p.Name, tagged,
			[]*istioapi.HTTPRouteDestination{r.destination(p, rel.Tag, 100)}))
	}
	var weighted []*istioapi.HTTPRouteDestination
	for _, rel := range r.Releases {
		if rel.Weight > 0 {
			weighted = append(weighted, r.destination(p, rel.Tag, rel.Weight))
		}
	}
	if len(weighted) > 0 {
		routes = append(routes, policy.route(releaseRoutePrefix+p.Name, cloneMatches(matches), weighted))
	}
	return routes
}

func (r Routing) destination(p *picchuv1alpha1.PortInfo, tag string, weight int32) *istioapi.HTTPRouteDestination {
	return &istioapi.HTTPRouteDestination{
		Destination: &istioapi.Destination{
			Host: meshHost(r.App, r.Target), Subset: tag, Port: &istioapi.PortSelector{Number: uint32(p.Port)},
		},
		Weight: weight,
	}
}

// route builds a route carrying its own copy of the policy, so no two routes share a message.
func (policy routePolicy) route(name string, matches []*istioapi.HTTPMatchRequest, to []*istioapi.HTTPRouteDestination) *istioapi.HTTPRoute {
	route := &istioapi.HTTPRoute{Name: name, Match: matches, Route: to}
	if policy.retries != nil {
		route.Retries = proto.Clone(policy.retries).(*istioapi.HTTPRetry)
	}
	if policy.timeout != nil {
		route.Timeout = proto.Clone(policy.timeout).(*durationpb.Duration)
	}
	if policy.fault != nil {
		route.Fault = proto.Clone(policy.fault).(*istioapi.HTTPFaultInjection)
	}
	return route
}

func cloneMatches(matches []*istioapi.HTTPMatchRequest) []*istioapi.HTTPMatchRequest {
	out := make([]*istioapi.HTTPMatchRequest, len(matches))
	for i, m := range matches {
		out[i] = proto.Clone(m).(*istioapi.HTTPMatchRequest)
	}
	return out
}

// sortedSet returns values sorted, without duplicates or any of except.
func sortedSet(values []string, except ...string) []string {
	out := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return slices.Contains(except, v) })
	slices.Sort(out)
	return slices.Compact(out)
}

// devRoute is the route "00_dev-<app>" to the developer service, on a
// cluster that enables dev routes when the service is set: every match of
// the app's routes, with the header the cluster's devRouteTagTemplate
// names present (any value). Nil otherwise.
func (r Routing) devRoute(cluster *picchuv1alpha1.Cluster, routes []*istioapi.HTTPRoute) (*istioapi.HTTPRoute, error) {
	if cluster == nil || !cluster.Spec.EnableDevRoutes || r.DevRoutes.Host == "" || r.DevRoutes.Port <= 0 {
		return nil, nil
	}
	header, err := cluster.DevRouteHeader(r.App, r.Target, r.Fleet)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	var matches []*istioapi.HTTPMatchRequest
	for _, route := range routes {
		if !strings.HasPrefix(route.Name, releaseRoutePrefix) {
			continue
		}
		for _, m := range cloneMatches(route.Match) {
			m.Headers = map[string]*istioapi.StringMatch{header: {MatchType: &istioapi.StringMatch_Regex{Regex: ".*"}}}
			matches = append(matches, m)
		}
	}
	if len(matches) == 0 {
		return nil, nil
	}
	return &istioapi.HTTPRoute{
		Name:  devRoutePrefix + r.App,
		Match: matches,
		Route: []*istioapi.HTTPRouteDestination{{Destination: &istioapi.Destination{
			Host: r.DevRoutes.Host, Port: &istioapi.PortSelector{Number: uint32(r.DevRoutes.Port)},
		}}},
	}, nil
}
