package manifests

import (
	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	istionetworking "istio.io/client-go/pkg/apis/networking/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IstioObject is a reference to the app's Istio object of kind
// (DestinationRule, VirtualService or Sidecar), to delete it.
func IstioObject(app, target, kind string) client.Object {
	meta := metav1.ObjectMeta{Name: app, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)}
	switch kind {
	case "DestinationRule":
		return &istionetworking.DestinationRule{ObjectMeta: meta}
	case "VirtualService":
		return &istionetworking.VirtualService{ObjectMeta: meta}
	default:
		return &istionetworking.Sidecar{ObjectMeta: meta}
	}
}

// IngressVirtualService is a reference to the app's VirtualService on its
// cluster's ingress gateways ("<app>-ingress"), to delete it.
func IngressVirtualService(app, target string) client.Object {
	vs := IstioObject(app, target, "VirtualService")
	vs.SetName(app + IngressVirtualServiceSuffix)
	return vs
}
