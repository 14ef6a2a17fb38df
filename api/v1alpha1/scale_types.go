package v1alpha1

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// ScaleInfo sets the replicas of a build and its autoscaler, the first that
// applies: with worker, a worker autoscaler; with kedaWorker, a KEDA
// ScaledObject; in ambient mesh with a targetRequestsRate, when the operator
// knows the cluster's Prometheus (--cluster-prometheus-address), a KEDA
// ScaledObject asking it for the build's request rate (and its CPU and
// memory utilisation when targets are set) instead of an HPA; with any
// target (CPU, memory or request rate), an HorizontalPodAutoscaler.
// Replica counts are for the whole fleet: Picchu divides them across the live
// clusters and multiplies each share by the cluster's scaling factor.
type ScaleInfo struct {
	// min is the fewest replicas the autoscaler may run. The release ramp uses
	// it as the capacity a build needs at 100% of traffic when no other build
	// serves.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Min *int32 `json:"min,omitempty"`
	// default is the number of replicas of a build without an autoscaler.
	// When unset it is min, or 1 without a min (the admission webhook writes
	// it; Picchu reads an unset default the same way).
	// +optional
	// +kubebuilder:validation:Minimum=0
	Default int32 `json:"default,omitempty"`
	// max is the most replicas the autoscaler may run.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	Max int32 `json:"max,omitempty"`
	// minReadySeconds of the ReplicaSet.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// targetCPUUtilizationPercentage is the autoscaler's CPU target, in percent of requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
	// targetMemoryUtilizationPercentage is the autoscaler's memory target, in percent of requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetMemoryUtilizationPercentage *int32 `json:"targetMemoryUtilizationPercentage,omitempty"`
	// targetRequestsRate is the autoscaler's target of requestsRateMetric per
	// pod, as a quantity such as "50" or "500m". In ambient mesh with the
	// cluster's Prometheus known it is the target of
	// sum(rate(istio_requests_total{destination_workload_namespace="<app>-<target>",
	// destination_workload="<tag>",reporter!="source"}[2m])) per pod
	// instead. With kedaWorker it makes the DatadogMetric "<tag>" (see
	// kedaWorker.triggers).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",message="must be a positive quantity such as 50 or 2500m"
	TargetRequestsRate *string `json:"targetRequestsRate,omitempty"`
	// requestsRateMetric is the per-pod metric (served by a metrics adapter)
	// that targetRequestsRate applies to. The autoscaler reads it by name in
	// an API path, so it is not "." or ".." and has no '/' or '%'.
	// +optional
	// +kubebuilder:default=istio_requests_rate
	// +kubebuilder:validation:Pattern=`^(|[^/%.][^/%]*|\.[^/%.][^/%]*|\.\.[^/%]+)$`
	RequestsRateMetric string `json:"requestsRateMetric,omitempty"`
	// worker scales a queue worker with the worker pod autoscaler.
	// +optional
	Worker *WorkerScaleInfo `json:"worker,omitempty"`
	// kedaWorker scales the build with a KEDA ScaledObject "<tag>" and a
	// TriggerAuthentication "<tag>", over scale.min to scale.max divided
	// over the clusters like the replicas (and for Datadog triggers, see
	// triggers). They are removed while the build ramps (Picchu sizes it
	// then), when it retires, and on clusters that run none of it.
	// +optional
	KedaWorker *KedaScaleInfo `json:"kedaWorker,omitempty"`
}

// WorkerScaleInfo configures the worker pod autoscaler for a queue worker.
type WorkerScaleInfo struct {
	// queueUri is the URI of the queue the workers consume.
	// +required
	QueueURI string `json:"queueUri"`
	// targetMessagesPerWorker is how many queued messages one worker should have.
	// +required
	// +kubebuilder:validation:Minimum=1
	TargetMessagesPerWorker *int32 `json:"targetMessagesPerWorker"`
	// secondsToProcessOneJobString is how long one message takes to process, in seconds.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$')",message="must be a non-negative number of seconds such as 0.5 or 3"
	SecondsToProcessOneJobString *string `json:"secondsToProcessOneJobString,omitempty"`
	// maxDisruption is the share of workers that may be stopped at once, such as "10%".
	// +required
	MaxDisruption *string `json:"maxDisruption"`
}

// KedaScaleInfo configures a KEDA ScaledObject "<tag>" on the build's
// ReplicaSet, with a TriggerAuthentication "<tag>". Its replica range comes
// from scale.min and scale.max (divided over the clusters like the
// replicas). Both are removed while the build ramps (Picchu sizes it then),
// when it retires, and on clusters that run none of it.
type KedaScaleInfo struct {
	// triggers of the ScaledObject. Triggers without an authentication
	// reference use the build's TriggerAuthentication (EKS pod identity) and
	// get metadata identityOwner=pod. When one is of type datadog, Picchu
	// also writes the ConfigMap "dd-cfg-<tag>" (the Datadog Cluster Agent's
	// datadogNamespace, datadogMetricsService, datadogMetricsServicePort,
	// unsafeSsl and authMode "bearer") and the Secret
	// "service-account-token" (a token of the app's service account), and
	// the TriggerAuthentication reads them: KEDA's Cluster Agent mode. With
	// scale.targetRequestsRate Picchu writes the DatadogMetric "<tag>"
	// (datadoghq.com/v1alpha1) of the build's requests per second,
	// sum:istio.mesh.request.count.total{destination_workload:<tag>,destination_workload_namespace:<app>-<target>}.as_rate(),
	// and a datadog trigger that names neither a query nor a
	// datadogMetricName reads it through the Cluster Agent, its targetValue
	// defaulting to targetRequestsRate.
	// +required
	Triggers []kedav1alpha1.ScaleTriggers `json:"triggers"`
	// cooldownPeriod is KEDA's wait, in seconds, after the last active trigger
	// before scaling to idleReplicaCount.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CooldownPeriod *int32 `json:"cooldownPeriod,omitempty"`
	// idleReplicaCount is the number of replicas when no trigger is active.
	// +optional
	// +kubebuilder:validation:Minimum=0
	IdleReplicaCount *int32 `json:"idleReplicaCount,omitempty"`
	// advanced holds KEDA's advanced options (HPA behaviour, scaling modifiers).
	// +optional
	Advanced *kedav1alpha1.AdvancedConfig `json:"advanced,omitempty"`
	// fallback is the number of replicas while the triggers fail.
	// +optional
	Fallback *kedav1alpha1.Fallback `json:"fallback,omitempty"`
	// minReplicaCount is ignored: scale.min is used.
	// +optional
	MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
	// maxReplicaCount is ignored: scale.max is used.
	// +optional
	MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
	// awsEksAuth is ignored: the TriggerAuthentication always uses EKS pod identity.
	// +optional
	AWSEKSAuth bool `json:"awsEksAuth,omitempty"`
}
