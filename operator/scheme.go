package operator

import (
	"fmt"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// NewScheme knows every kind Picchu reads or writes: Kubernetes', Picchu's
// own, and the third-party kinds its plans write to target clusters (Istio,
// prometheus-operator, KEDA, Sloth and the Gateway API). The operator's clients, local and
// remote, all use it.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		picchuv1alpha1.AddToScheme,
		istionetworkingv1alpha3.AddToScheme,
		monitoringv1.AddToScheme,
		kedav1alpha1.AddToScheme,
		slothv1.AddToScheme,
		gatewayv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}
