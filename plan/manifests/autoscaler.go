package manifests

import (
	"fmt"
	"maps"
	"strconv"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// WorkerPodAutoscalerKind is the worker pod autoscaler's kind. Its Go
// module is not available, so its objects are written unstructured.
var WorkerPodAutoscalerKind = schema.GroupVersionKind{Group: "k8s.practo.dev", Version: "v1", Kind: "WorkerPodAutoScaler"}

// AnnotationRamping marks a ReplicaSet whose replicas Picchu sets while the
// build ramps, its autoscaler removed. Picchu applies it only while
// ramping, so server-side apply removes it when ramping ends; other
// annotations on the ReplicaSet are never touched.
const AnnotationRamping = "picchu.medium.engineering/ramping"

// Scaler is what a build's autoscaler on one cluster is built from.
type Scaler struct {
	App, Target, Tag string
	Scale            picchuv1alpha1.ScaleInfo
	// Min and Max are the build's replica range on this cluster (its share
	// of scale.min and scale.max times the cluster's scaling factor).
	Min, Max int32
	// Ambient is the build's ambientMesh, and ClusterPrometheus the
	// address of the cluster's Prometheus (the operator's
	// --cluster-prometheus-address): with a request-rate target they make
	// the build scale with PrometheusScaledObject rather than an HPA
	// (ScalesOnClusterPrometheus).
	Ambient           bool
	ClusterPrometheus string
	// DatadogAgent is where KEDA's datadog triggers reach the Datadog
	// Cluster Agent (DatadogConfig).
	DatadogAgent DatadogClusterAgent
}

func (s Scaler) meta() metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: s.Tag, Namespace: picchuv1alpha1.AppNamespace(s.App, s.Target), Labels: tagLabels(s.App, s.Target, s.Tag)}
}

// HorizontalPodAutoscaler is the build's HPA on its ReplicaSet: the CPU and
// memory utilisation targets, and the request-rate target as a Pods metric
// (requestsRateMetric averaging targetRequestsRate per pod). Nil when the
// build sets no target.
func HorizontalPodAutoscaler(s Scaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	var metrics []autoscalingv2.MetricSpec
	for _, r := range []struct {
		name   corev1.ResourceName
		target *int32
	}{{corev1.ResourceCPU, s.Scale.TargetCPUUtilizationPercentage}, {corev1.ResourceMemory, s.Scale.TargetMemoryUtilizationPercentage}} {
		if r.target == nil {
			continue
		}
		utilization := *r.target
		metrics = append(metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: r.name, Target: autoscalingv2.MetricTarget{
				Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &utilization,
			}},
		})
	}
	if s.Scale.TargetRequestsRate != nil && s.Scale.RequestsRateMetric != "" {
		rate, err := resource.ParseQuantity(*s.Scale.TargetRequestsRate)
		if err != nil {
			return nil, fmt.Errorf("scale.targetRequestsRate %q: %w", *s.Scale.TargetRequestsRate, err)
		}
		metrics = append(metrics, autoscalingv2.MetricSpec{
			Type: autoscalingv2.PodsMetricSourceType,
			Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: s.Scale.RequestsRateMetric},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &rate},
			},
		})
	}
	if len(metrics) == 0 {
		return nil, nil
	}
	lo := max(s.Min, 1)
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: s.meta(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: s.Tag},
			MinReplicas:    &lo, MaxReplicas: max(s.Max, lo), Metrics: metrics,
		},
	}, nil
}

// TriggerAuthentication is the build's KEDA TriggerAuthentication: the
// pod's AWS identity (EKS pod identity), for the triggers that name no
// authentication of their own. When a trigger is of type datadog it also
// gives the Datadog Cluster Agent's settings, from the build's ConfigMap
// DatadogConfig, and the token of the app's service account, from the
// Secret ServiceAccountToken (key "token"), as KEDA's datadog scaler takes
// them in Cluster Agent mode.
func TriggerAuthentication(s Scaler) *kedav1alpha1.TriggerAuthentication {
	ta := &kedav1alpha1.TriggerAuthentication{
		ObjectMeta: s.meta(),
		Spec: kedav1alpha1.TriggerAuthenticationSpec{
			PodIdentity: &kedav1alpha1.AuthPodIdentity{Provider: kedav1alpha1.PodIdentityProviderAws},
		},
	}
	if HasDatadogTrigger(s) {
		for _, key := range datadogConfigKeys {
			ta.Spec.ConfigMapTargetRef = append(ta.Spec.ConfigMapTargetRef,
				kedav1alpha1.AuthConfigMapTargetRef{Parameter: key, Name: DatadogConfigName(s.Tag), Key: key})
		}
		ta.Spec.SecretTargetRef = []kedav1alpha1.AuthSecretTargetRef{{Parameter: "token", Name: ServiceAccountTokenName, Key: corev1.ServiceAccountTokenKey}}
	}
	return ta
}

// ScaledObject is the build's KEDA ScaledObject on its ReplicaSet, from
// scale.kedaWorker, over the build's replica range on this cluster. Triggers
// without an authentication use the build's TriggerAuthentication, with the
// pod's identity. A datadog trigger that names neither a query nor a
// DatadogMetric reads the build's DatadogMetric (datadogMetricTrigger).
// Nil without kedaWorker. The input is not modified.
func ScaledObject(s Scaler) *kedav1alpha1.ScaledObject {
	k := s.Scale.KedaWorker
	if k == nil {
		return nil
	}
	lo, hi := max(s.Min, 0), max(s.Max, s.Min, 1)
	so := &kedav1alpha1.ScaledObject{
		ObjectMeta: s.meta(),
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef:  &kedav1alpha1.ScaleTarget{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: s.Tag},
			MinReplicaCount: &lo, MaxReplicaCount: &hi,
			CooldownPeriod: k.CooldownPeriod, IdleReplicaCount: k.IdleReplicaCount,
			Advanced: k.Advanced.DeepCopy(), Fallback: k.Fallback.DeepCopy(),
		},
	}
	for _, trigger := range k.Triggers {
		tr := *trigger.DeepCopy()
		tr.Metadata = maps.Clone(tr.Metadata)
		if tr.Metadata == nil {
			tr.Metadata = map[string]string{}
		}
		if tr.AuthenticationRef == nil {
			tr.AuthenticationRef = &kedav1alpha1.AuthenticationRef{Name: s.Tag}
			tr.Metadata["identityOwner"] = "pod"
		}
		so.Spec.Triggers = append(so.Spec.Triggers, datadogMetricTrigger(s, tr))
	}
	return so
}

// WorkerPodAutoscaler is the build's worker pod autoscaler on its
// ReplicaSet, from scale.worker; nil without it.
func WorkerPodAutoscaler(s Scaler) *unstructured.Unstructured {
	w := s.Scale.Worker
	if w == nil {
		return nil
	}
	lo, hi := max(s.Min, 0), max(s.Max, s.Min, 1)
	spec := map[string]any{
		"minReplicas": int64(lo), "maxReplicas": int64(hi), "replicaSetName": s.Tag, "queueURI": w.QueueURI,
	}
	if w.TargetMessagesPerWorker != nil {
		spec["targetMessagesPerWorker"] = int64(*w.TargetMessagesPerWorker)
	}
	if w.SecondsToProcessOneJobString != nil {
		if secs, err := strconv.ParseFloat(*w.SecondsToProcessOneJobString, 64); err == nil {
			spec["secondsToProcessOneJob"] = secs
		}
	}
	if w.MaxDisruption != nil {
		spec["maxDisruption"] = *w.MaxDisruption
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(WorkerPodAutoscalerKind)
	m := s.meta()
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	return u
}
