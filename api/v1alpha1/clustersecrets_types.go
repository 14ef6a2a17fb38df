package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSecrets copies Secrets from the delivery cluster to the selected
// Clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.source.namespace`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target.namespace`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSecrets struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec selects the Secrets to copy and the Clusters to copy them to.
	// +required
	Spec ClusterSecretsSpec `json:"spec"`
	// status lists the Secrets copied.
	// +optional
	Status ClusterSecretsStatus `json:"status,omitempty"`
}

// ClusterSecretsSpec selects Secrets and the Clusters they are copied to.
type ClusterSecretsSpec struct {
	// source selects the Secrets in the delivery cluster.
	// +required
	Source SecretSource `json:"source"`
	// target selects the Clusters (in this object's namespace) and where the copies go.
	// +required
	Target SecretTarget `json:"target"`
}

// SecretSource selects Secrets in the delivery cluster.
type SecretSource struct {
	// namespace of the Secrets.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// labelSelector over the Secrets, such as "app=api,team!=ops".
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// fieldSelector over the Secrets, such as "metadata.name=db".
	// +optional
	FieldSelector string `json:"fieldSelector,omitempty"`
}

// SecretTarget selects Clusters and says where the copied Secrets go.
type SecretTarget struct {
	// namespace the copies are written to on each cluster.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// labelSelector over the Clusters.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// fieldSelector over the Clusters.
	// +optional
	FieldSelector string `json:"fieldSelector,omitempty"`
	// labels of the copies (they replace the source's labels).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the copies (they replace the source's annotations).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClusterSecretsStatus lists the Secrets copied.
type ClusterSecretsStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// secrets are the names of the Secrets copied.
	// +optional
	Secrets []string `json:"secrets,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterSecretsList is a list of ClusterSecrets.
type ClusterSecretsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSecrets `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterSecrets{}, &ClusterSecretsList{})
}
