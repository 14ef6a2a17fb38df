package manifests

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// AppNamespace is the namespace of an app's target, labelled for its
// mesh mode: sidecar injection, ambient mode with its waypoint, or both
// while builds of each run (ModeOf).
func AppNamespace(app, target string, mode MeshMode) *corev1.Namespace {
	l := appLabels(app, target)
	maps.Copy(l, meshLabels(mode))
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: picchuv1alpha1.AppNamespace(app, target), Labels: l}}
}

// ServiceAccount is the app's service account; with an IAM role, annotated for IRSA.
func ServiceAccount(app, target, iamRole string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: app, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target),
	}}
	if iamRole != "" {
		sa.Annotations = map[string]string{annotationIRSARole: iamRole}
	}
	return sa
}

// Service is the app's Service, selecting all of its pods (routing between
// builds is Istio's), or nil when ports is empty: a Service needs a port,
// and an app whose builds serve none (a queue worker) needs no Service.
//
// ports are the ports of the app's builds, in precedence order (the caller
// gives the newest routable build's first). The Service has one port per
// port number and protocol, and no two with the same name, so the union of
// the builds' ports is always a valid Service: the first port with a
// number and protocol names the Service port, a later one with the same
// number and protocol (a port renamed between builds) joins it, and a later
// one whose name is already taken by another number is left out.
//
// A Service port targets the containers' port by name, so that builds may
// move it to another containerPort. When the builds sharing a Service port
// name it differently, a name reaches only some of their pods: it targets
// the containerPort number instead when they all agree on it, so the pods
// of every build stay endpoints, and the first port's name otherwise.
func Service(app, target string, ports []picchuv1alpha1.PortInfo) *corev1.Service {
	servicePorts := uniqueServicePorts(ports)
	if len(servicePorts) == 0 {
		return nil
	}
	l := appLabels(app, target)
	l["prometheus.io/scrape"] = "true"
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: l},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: target},
			Ports:    servicePorts,
		},
	}
}

// ServiceObject is a reference to the app's Service, with its owner
// labels, to delete it.
func ServiceObject(app, target string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)}}
}

// uniqueServicePorts merges ports into Service ports, one per number and
// protocol and per name, as Service documents.
func uniqueServicePorts(ports []picchuv1alpha1.PortInfo) []corev1.ServicePort {
	type key struct {
		port     int32
		protocol corev1.Protocol
	}
	type group struct {
		first         *picchuv1alpha1.PortInfo
		sameName      bool
		sameContainer bool
	}
	var order []key
	groups := map[key]*group{}
	names := map[string]bool{}
	for i := range ports {
		p := &ports[i]
		k := key{p.Port, protocolOrTCP(p.Protocol)}
		if g, ok := groups[k]; ok {
			g.sameName = g.sameName && p.Name == g.first.Name
			g.sameContainer = g.sameContainer && p.ContainerPort == g.first.ContainerPort
			continue
		}
		if names[p.Name] {
			continue
		}
		names[p.Name] = true
		groups[k] = &group{first: p, sameName: true, sameContainer: true}
		order = append(order, k)
	}
	out := make([]corev1.ServicePort, 0, len(order))
	for _, k := range order {
		g := groups[k]
		target := intstr.FromString(g.first.Name)
		if !g.sameName && g.sameContainer && g.first.ContainerPort > 0 {
			target = intstr.FromInt32(g.first.ContainerPort)
		}
		out = append(out, corev1.ServicePort{
			Name: g.first.Name, Port: g.first.Port, Protocol: g.first.Protocol, TargetPort: target,
		})
	}
	return out
}

// protocolOrTCP is a port's protocol as the API server defaults it.
func protocolOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// PodDisruptionBudget is the app's PDB, from the newest build's spec or, by
// default, at most 10% of its pods unavailable. It selects all the app's pods.
func PodDisruptionBudget(app, target string, spec *policyv1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)},
	}
	if spec != nil {
		pdb.Spec = *spec.DeepCopy()
	}
	if pdb.Spec.MaxUnavailable == nil && pdb.Spec.MinAvailable == nil {
		tenPercent := intstr.FromString("10%")
		pdb.Spec.MaxUnavailable = &tenPercent
	}
	pdb.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{
		picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: target,
	}}
	return pdb
}
