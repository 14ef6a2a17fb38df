package plan

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// AppNamespace is the namespace of an app's target, with Istio sidecar injection.
func AppNamespace(app, target string) *corev1.Namespace {
	l := appLabels(app, target)
	l[labelIstioInj] = "enabled"
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace(app, target), Labels: l}}
}

// ServiceAccount is the app's service account; with an IAM role, annotated for IRSA.
func ServiceAccount(app, target, iamRole string) *corev1.ServiceAccount {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: app, Namespace: Namespace(app, target), Labels: appLabels(app, target),
	}}
	if iamRole != "" {
		sa.Annotations = map[string]string{annotationIRSARole: iamRole}
	}
	return sa
}

// Service is the app's Service: every port of its live builds, by port name,
// selecting all of the app's pods (routing between builds is Istio's).
func Service(app, target string, ports []picchuv1alpha1.PortInfo) *corev1.Service {
	l := appLabels(app, target)
	l["prometheus.io/scrape"] = "true"
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: Namespace(app, target), Labels: l},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: target},
		},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name: p.Name, Port: p.Port, Protocol: p.Protocol, TargetPort: intstr.FromString(p.Name),
		})
	}
	return svc
}

// PodDisruptionBudget is the app's PDB, from the newest build's spec or, by
// default, at most 10% of its pods unavailable. It selects all the app's pods.
func PodDisruptionBudget(app, target string, spec *policyv1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: Namespace(app, target), Labels: appLabels(app, target)},
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
