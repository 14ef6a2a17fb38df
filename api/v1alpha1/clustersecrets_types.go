package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSecrets copies Secrets of the delivery cluster to the enabled
// Clusters it selects, keeps the copies in step with their sources, and
// removes the copies it made when they are no longer selected, when a
// Cluster is no longer selected, and when it is deleted (see
// docs/clustersecrets.md).
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
	// status lists the Secrets copied and says, per cluster, whether the
	// copies are in place.
	// +optional
	Status ClusterSecretsStatus `json:"status,omitempty"`
}

// ClusterSecretsSpec selects Secrets and the Clusters they are copied to.
type ClusterSecretsSpec struct {
	// source selects the Secrets in the delivery cluster.
	// +required
	Source SecretSource `json:"source"`
	// target selects the enabled Clusters (in this object's namespace) and
	// says where the copies go and how they are labelled.
	// +required
	Target SecretTarget `json:"target"`
}

// SecretSource selects Secrets in the delivery cluster. Secrets that hold
// credentials are never copied: a Secret named like a Cluster of the
// namespace, one labelled picchu.medium.engineering/credentials, a
// service-account token.
type SecretSource struct {
	// namespace of the Secrets: the ClusterSecrets' own, unless the
	// operator allows copies from this one (--allow-cross-namespace-sources),
	// else the ClusterSecrets is Stalled (SourceNotAllowed) and copies
	// nothing. The operator must also read Secrets there (one of its
	// --namespaces), else it is Stalled (SourceNotWatched).
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// labelSelector over the Secrets, such as "app=api,team!=ops"; empty
	// selects every Secret of the namespace.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// fieldSelector over the Secrets, such as "metadata.name=db" or
	// "type=kubernetes.io/tls": only metadata.name, metadata.namespace
	// and type, with =, == or !=.
	// +optional
	FieldSelector string `json:"fieldSelector,omitempty"`
}

// SecretTarget selects Clusters and says where the copied Secrets go.
type SecretTarget struct {
	// namespace the copies are written to on each cluster. Picchu creates
	// it when it is missing (labelled and annotated
	// picchu.medium.engineering/clustersecrets), and never deletes it.
	// +required
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// labelSelector over the Clusters, such as
	// "picchu.medium.engineering/fleet=production"; empty selects every
	// enabled Cluster.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// fieldSelector over the Clusters: only metadata.name and
	// metadata.namespace, such as "metadata.name!=west".
	// +optional
	FieldSelector string `json:"fieldSelector,omitempty"`
	// labels of the copies: they replace the source's labels, and Picchu
	// adds picchu.medium.engineering/clustersecrets=<this object's name>
	// (shortened with a hash when longer than 63 characters).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the copies: they replace the source's annotations,
	// and Picchu adds picchu.medium.engineering/clustersecrets=<namespace>/<name>.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ClusterSecretsStatus lists the Secrets copied and how the copying went.
type ClusterSecretsStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// Ready is False, naming each cluster and why, while a selected
	// cluster does not have the copies; Stalled is True when the spec
	// cannot be acted on or a copy's name is taken by another object.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// secrets are the names of the Secrets selected and copied to the
	// selected clusters (Ready says whether every one has them).
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
