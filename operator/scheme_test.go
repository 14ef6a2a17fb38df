package operator_test

import (
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	istionetworkingv1alpha3 "istio.io/client-go/pkg/apis/networking/v1alpha3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
)

// TestNewScheme_KnowsEveryKindPlansWrite guards the operator binary: its
// clients use this scheme, so a kind missing here fails every apply of it.
func TestNewScheme_KnowsEveryKindPlansWrite(t *testing.T) {
	s, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{
		&picchuv1alpha1.Revision{}, &appsv1.ReplicaSet{}, &autoscalingv2.HorizontalPodAutoscaler{},
		&istionetworkingv1alpha3.VirtualService{}, &istionetworkingv1alpha3.DestinationRule{}, &istionetworkingv1alpha3.Sidecar{},
		&monitoringv1.ServiceMonitor{}, &monitoringv1.PrometheusRule{}, &slothv1.PrometheusServiceLevel{},
		&kedav1alpha1.ScaledObject{}, &kedav1alpha1.TriggerAuthentication{},
	} {
		if _, err := apiutil.GVKForObject(obj, s); err != nil {
			t.Errorf("%T: %v", obj, err)
		}
	}
}
