package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mirror copies the Revisions of its namespace, with their config, to
// another Picchu delivery cluster: each build once it is deployed at home
// (a target counts replicas of it) and unless it sets disableMirroring.
// A build's copies are the ConfigMaps, Secrets and ExternalSecrets of each
// target's configSelector (ExternalSecrets only where the mirror serves
// them), the ConfigMaps and Secrets of additionalConfigSelectors, then the
// Revision: its spec with every target's externalTest.enabled false, its
// labels and annotations without Picchu's bookkeeping, no status. They go
// to the namespaces of the same names on the mirror, are written only when
// they differ, and are deleted from the mirror when their source is
// deleted at home. Credentials are never copied, and an object on the
// mirror the Mirror did not write is left as it is. Failures are retried
// with backoff, shown in status.conditions and counted in
// picchu_mirror_failure_counter; they never hold the release at home.
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
	// status reports the last run: what was copied, left out or failed.
	// +optional
	Status MirrorStatus `json:"status,omitempty"`
}

// MirrorSpec names a mirror delivery cluster and the extra config to copy.
type MirrorSpec struct {
	// clusterName is the Cluster, in the Mirror's namespace, whose API server
	// is the mirror delivery cluster, reached with the credentials of the
	// Secret of the same name. It must be enabled, and in no fleet a
	// Revision targets (else builds are deployed to it as to a target).
	// +required
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`
	// additionalConfigSelectors select more ConfigMaps and Secrets to copy
	// with each build, before its Revision.
	// +optional
	AdditionalConfigSelectors []AdditionalConfigSelector `json:"additionalConfigSelectors,omitempty"`
}

// AdditionalConfigSelector selects the ConfigMaps and Secrets of a build:
// those of namespace that labelSelector selects and that carry the build's
// app and tag under appLabelName and tagLabelName.
type AdditionalConfigSelector struct {
	// namespace to select in (the Mirror's when empty). Another namespace
	// than the Mirror's must be allowed by the operator
	// (--allow-cross-namespace-sources), else the Mirror is Stalled
	// (SourceNotAllowed) and copies nothing; and it must be one of the
	// operator's --namespaces, the only ones whose ConfigMaps and Secrets it
	// reads. The copies go to the namespace of the same name on the mirror.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// labelSelector the ConfigMaps and Secrets must match too (any when unset).
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// appLabelName is the label that must hold the build's app (spec.app.name).
	// +required
	AppLabelName string `json:"appLabelName"`
	// tagLabelName is the label that must hold the build's tag (spec.app.tag).
	// +required
	TagLabelName string `json:"tagLabelName"`
}

// MirrorStatus reports the last run of a Mirror.
type MirrorStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions. Ready is True (Mirrored) when
	// every build to copy is copied, its message counting them and what was
	// left out (builds not deployed or with disableMirroring, credentials,
	// ExternalSecrets the mirror does not serve); False otherwise, its
	// reason that of the first failure (ClusterNotFound,
	// ClusterNotConnected, Unreachable, Rejected, NotOwned,
	// ConfigUnreadable, SourceNotAllowed) and its message naming each
	// failed build.
	// Reconciling is True while a failure is retried with backoff
	// (Unreachable, ClusterNotConnected); Stalled while one needs a person.
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
