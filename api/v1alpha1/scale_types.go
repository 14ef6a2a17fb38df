package v1alpha1

import (
	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// ScaleInfo sets the replicas of a build and its autoscaler. With any target
// (CPU, memory or request rate) Picchu writes an HorizontalPodAutoscaler; with
// worker or kedaWorker it writes a worker autoscaler or a KEDA ScaledObject.
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
	// pod, as a quantity such as "50" or "500m".
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
	// kedaWorker scales the build with KEDA.
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

// KedaScaleInfo configures a KEDA ScaledObject for the build. Its replica
// range comes from scale.min and scale.max.
type KedaScaleInfo struct {
	// triggers of the ScaledObject. Triggers without an authentication
	// reference use the build's TriggerAuthentication.
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
