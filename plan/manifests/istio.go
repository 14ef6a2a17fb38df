package manifests

import (
	"fmt"

	istioapi "istio.io/api/networking/v1alpha3"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Routing is what an app's Istio objects are built from on one cluster.
type Routing struct {
	App, Target, Fleet string
	// Ports is the union, by name, of the ports of the app's deploying and
	// deployed builds (the caller computes it; the newest deployed build's
	// definition wins).
	Ports []picchuv1alpha1.PortInfo
	// DefaultIngressPorts maps an ingress name ("public", "private") to the
	// port name that gets the default hosts; from the newest build.
	DefaultIngressPorts map[string]string
	// Releases are the deployed builds, newest first.
	Releases []Release
	// Running are the tags of the builds synced on the cluster (deploying
	// or deployed), newest first: the Gateway API router gives each its
	// Service before it takes traffic, so that the Service has its
	// endpoints by then.
	Running []string
	// EgressHosts of the newest build's istio.sidecar.egressHosts.
	EgressHosts []string
	// Faults are the FaultInjector faults that apply to the app in this
	// target, in order; when several match a port, the last wins.
	Faults []picchuv1alpha1.HTTPPortFault
	// DevRoutes is the developer service that dev routes send to, on
	// clusters that enable them (--dev-routes-service-host and -port).
	DevRoutes DevRoutes
}

// DevRoutes is a developer service: a request carrying the header a
// cluster's devRouteTagTemplate names goes to it instead of the app.
type DevRoutes struct {
	Host string
	Port int
}

// Release is one deployed build as routing sees it.
type Release struct {
	Tag string
	// Weight is its percent of release traffic, 0..100. The weights of all
	// releases sum to 100, or are all 0.
	Weight int32
	// TagRoutingHeader, when set and Tagged is true, gives the build header routes.
	TagRoutingHeader string
	// Tagged says the build is routable by header (deployed and not
	// canaried/pendingrelease).
	Tagged bool
	// TrafficPolicy is the build's istio.trafficPolicy, for its subset.
	TrafficPolicy *picchuv1alpha1.TrafficPolicy
}

// meshGateway is Istio's name for the sidecars of the mesh, as a gateway.
const meshGateway = "mesh"

// meshHost is the app's Service inside the cluster; the DestinationRule and
// every route's destination name it.
func meshHost(app, target string) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local", app, picchuv1alpha1.AppNamespace(app, target))
}

func (r Routing) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: r.App, Namespace: picchuv1alpha1.AppNamespace(r.App, r.Target), Labels: appLabels(r.App, r.Target)}
}

// DestinationRule is the app's DestinationRule: one subset per release,
// named by its tag and selecting its pods by tag, with the release's traffic
// policy. It is nil when there are no releases, and when there are no ports:
// its host is the app's Service, which Service does not build without them.
func DestinationRule(r Routing) (*istionetworking.DestinationRule, error) {
	if len(r.Releases) == 0 || len(r.Ports) == 0 {
		return nil, nil
	}
	dr := &istionetworking.DestinationRule{
		ObjectMeta: r.objectMeta(),
		Spec:       istioapi.DestinationRule{Host: meshHost(r.App, r.Target)},
	}
	for _, rel := range r.Releases {
		policy, err := convertTrafficPolicy(rel.TrafficPolicy)
		if err != nil {
			return nil, fmt.Errorf("release %s: istio.trafficPolicy.%w", rel.Tag, err)
		}
		dr.Spec.Subsets = append(dr.Spec.Subsets, &istioapi.Subset{
			Name:          rel.Tag,
			Labels:        map[string]string{picchuv1alpha1.LabelPodTag: rel.Tag},
			TrafficPolicy: policy,
		})
	}
	return dr, nil
}

// Sidecar is the app's Sidecar, limiting what its proxies reach to the
// egress hosts. It is nil when there are none.
func Sidecar(r Routing) *istionetworking.Sidecar {
	if len(r.EgressHosts) == 0 {
		return nil
	}
	return &istionetworking.Sidecar{
		ObjectMeta: r.objectMeta(),
		Spec: istioapi.Sidecar{Egress: []*istioapi.IstioEgressListener{
			{Hosts: cloneStrings(r.EgressHosts)},
		}},
	}
}
