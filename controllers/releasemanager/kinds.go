package releasemanager

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/medium/picchu/plan/manifests"
)

// The kinds of what Picchu applies and prunes on a target.
var (
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	configMapKind             = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	serviceKind               = corev1.SchemeGroupVersion.WithKind("Service")
	secretKind                = corev1.SchemeGroupVersion.WithKind("Secret")
	hpaKind                   = autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler")
	scaledObjectKind          = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledObject"}
	triggerAuthenticationKind = schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "TriggerAuthentication"}
	serviceMonitorKind        = monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind)
	prometheusRuleKind        = monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind)
	serviceLevelsKind         = slothv1.SchemeGroupVersion.WithKind("PrometheusServiceLevel")
)

// autoscalerKinds are the kinds of a build's autoscaler objects, removed
// while it ramps, when it retires and where it is idle, by the build's
// labels. Its Datadog settings (a ConfigMap) are removed by name.
var autoscalerKinds = []schema.GroupVersionKind{
	hpaKind, scaledObjectKind, triggerAuthenticationKind, manifests.WorkerPodAutoscalerKind, manifests.DatadogMetricKind,
}

// buildKinds are the kinds of a build's objects on a cluster, deleted with
// it; kinds a cluster does not serve are skipped.
var buildKinds = append([]schema.GroupVersionKind{
	replicaSetKind, configMapKind, secretKind, manifests.ExternalSecretKind,
}, autoscalerKinds...)
