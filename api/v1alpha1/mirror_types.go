package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mirror copies Revisions and their config to another Picchu delivery cluster.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Mirror struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the mirror delivery cluster and the extra config to copy.
	// +required
	Spec MirrorSpec `json:"spec"`
	// status reports the mirroring.
	// +optional
	Status MirrorStatus `json:"status,omitempty"`
}

// MirrorSpec names a mirror delivery cluster and the extra config to copy.
type MirrorSpec struct {
	// clusterName is the Cluster (in the Revision's namespace) that runs the mirror Picchu.
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`
	// additionalConfigSelectors select more ConfigMaps and Secrets to copy with each Revision.
	// +optional
	AdditionalConfigSelectors []AdditionalConfigSelector `json:"additionalConfigSelectors,omitempty"`
}

// AdditionalConfigSelector selects ConfigMaps and Secrets of a Revision's app and tag.
type AdditionalConfigSelector struct {
	// namespace to select in (the Revision's when empty).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// labelSelector over the ConfigMaps and Secrets.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// appLabelName is the label that must hold the Revision's app.
	// +required
	AppLabelName string `json:"appLabelName"`
	// tagLabelName is the label that must hold the Revision's tag.
	// +required
	TagLabelName string `json:"tagLabelName"`
}

// MirrorStatus reports the mirroring.
type MirrorStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// MirrorList is a list of Mirrors.
type MirrorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Mirror `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Mirror{}, &MirrorList{})
}
