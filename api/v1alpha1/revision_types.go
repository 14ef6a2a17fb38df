package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Revision is one build of an app. CI, a GitOps sync or a person applies one
// Revision per build; Picchu deploys it to every cluster of each target's
// fleet, canaries and ramps it on the release schedule, and retires or rolls
// it back.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rev
// +kubebuilder:printcolumn:name="App",type=string,JSONPath=`.spec.app.name`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.spec.app.tag`
// +kubebuilder:printcolumn:name="Targets",type=string,JSONPath=`.status.summary`,description="state and traffic percent per target"
// +kubebuilder:printcolumn:name="Failed",type=boolean,JSONPath=`.spec.failed`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.spec.app.name`
type Revision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the build and how to deliver it to each target. It is the
	// build's desired state: an edit to what goes into its pods reaches the
	// build's ReplicaSets on every cluster in place, for the pods that
	// start afterwards; pods already running are not restarted. Apply a new
	// build (tag) to ship a change progressively.
	// +required
	Spec RevisionSpec `json:"spec"`
	// status mirrors each target's release state, written by Picchu.
	// +optional
	Status RevisionStatus `json:"status,omitempty"`

	// undecoded is what decoding kept of a spec or status the Go types
	// cannot hold (see DecodeError).
	undecoded undecoded `json:"-"`
}

// RevisionSpec describes one build of an app and how to deliver it.
//
// +kubebuilder:validation:XValidation:rule="self.targets.all(t, size(self.app.name) + size(t.name) <= 62)",message="app.name and each target name joined as \"<app>-<target>\" must fit a 63-character namespace name",fieldPath=".targets"
// +kubebuilder:validation:XValidation:rule="self.targets.all(t, !has(t.releaseSilences) || t.releaseSilences.all(s, s.matchers.all(m, m.name != 'namespace' || (size(m.value) == size(self.app.name) + size(t.name) + 1 && m.value.startsWith(self.app.name) && m.value.endsWith(t.name)))))",message="a releaseSilences matcher on namespace must be namespace=\"<app>-<target>\": Picchu scopes every release silence to the app's namespace in its target",fieldPath=".targets"
type RevisionSpec struct {
	// app identifies the app and the build: its name, tag and image.
	// +required
	App RevisionApp `json:"app"`

	// targets lists where the build goes. Each target (for example "staging" or
	// "production") is deployed to every enabled cluster of its fleet and
	// released on its own schedule. Target names are unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Targets []RevisionTarget `json:"targets"`

	// failed marks the build as bad. A person, CI or Picchu (on a firing SLO
	// alert) sets it; the revision then loses its traffic to the previous
	// release in every cluster and retires. Setting it back to false
	// recommissions the revision.
	// +optional
	Failed bool `json:"failed,omitempty"`

	// ignoreSLOs keeps Picchu from failing this revision on SLO alerts.
	// +optional
	IgnoreSLOs bool `json:"ignoreSLOs,omitempty"`

	// canaryWithSLIRules makes Picchu consider only the per-tag canary alerts
	// when deciding whether this revision fails.
	// +optional
	CanaryWithSLIRules bool `json:"canaryWithSLIRules,omitempty"`

	// tagRoutingHeader is the name of an HTTP header: a request carrying
	// "<tagRoutingHeader>: <tag>" is routed to this tag, whatever the weights.
	// Testers use it to reach a build before it takes traffic.
	// +optional
	TagRoutingHeader string `json:"tagRoutingHeader,omitempty"`

	// disableMirroring keeps this build from being copied by the Mirrors of
	// its namespace. Set once a copy exists, it stops the copy's updates and
	// leaves it on the mirror, until the Revision is deleted.
	// +optional
	DisableMirroring bool `json:"disableMirroring,omitempty"`

	// eventDriven marks an event-driven workload (a queue worker). A Cluster
	// with disableEventDriven runs none of it: there its ReplicaSets stay at
	// 0 replicas and have no autoscaler, and the cluster does not count for
	// it: its replicas are divided over the other live clusters, and its
	// deployment and the capacity its release waits for are those of the
	// other clusters alone. Its routes there, if it has ports, reach no pod.
	// A build that every live cluster disables never deploys (it times out).
	// +optional
	EventDriven bool `json:"eventDriven,omitempty"`

	// sentry is kept for compatibility with existing manifests; Picchu ignores it.
	// +optional
	Sentry *SentryInfo `json:"sentry,omitempty"`
}

// RevisionApp identifies an app and one of its builds.
type RevisionApp struct {
	// name of the app. The namespace on every target cluster is "<name>-<target>".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=62
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// ref is the source reference of the build (a branch or commit); informational.
	// +optional
	Ref string `json:"ref,omitempty"`
	// tag names the build. It names the ReplicaSet and the routing subset on
	// every cluster and is a label value there, so it is at most 63 lower-case
	// letters, digits, '-' and '.', in dot-separated parts that each start and
	// end with a letter or digit (a DNS subdomain).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Tag string `json:"tag"`
	// image is the container image of the app container, without leading or
	// trailing whitespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[^\t\n\v\f\r\x{85}\p{Z}](.*[^\t\n\v\f\r\x{85}\p{Z}])?$`
	Image string `json:"image"`
	// imagePullSecrets name Secrets (kubernetes.io/dockerconfigjson or
	// kubernetes.io/dockercfg) in the Revision's namespace whose credentials
	// Picchu reads the image's platforms with, when the operator inspects
	// images (--inspect-image-platforms). They are never copied to target
	// clusters: their nodes pull with their own credentials.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// SentryInfo is kept for compatibility with existing manifests; Picchu ignores it.
type SentryInfo struct {
	// release is ignored.
	// +optional
	Release bool `json:"release,omitempty"`
}

// RevisionStatus mirrors, per target, the state Picchu keeps in the target's
// ReleaseManager.
type RevisionStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// targets holds the state, traffic and scale of this revision per target.
	// +optional
	// +listType=map
	// +listMapKey=name
	Targets []RevisionTargetStatus `json:"targets,omitempty"`
	// summary is a short line such as "production=releasing 40% staging=released 100%",
	// shown by "kubectl get revisions".
	// +optional
	Summary string `json:"summary,omitempty"`
}

// RevisionTargetStatus is the state of a revision in one target.
type RevisionTargetStatus struct {
	// name of the target.
	Name string `json:"name"`
	// state of the revision in this target (created, deploying, releasing, ...).
	// +optional
	State string `json:"state,omitempty"`
	// scale counts the revision's replicas over the target's live clusters.
	// +optional
	Scale RevisionScaleStatus `json:"scale,omitempty"`
	// release holds the share of traffic the revision takes in this target.
	// +optional
	Release RevisionReleaseStatus `json:"release,omitempty"`
	// paused says the revision is paused in this target.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// triggeredAlerts are the SLO or canary alerts seen firing for this
	// revision in this target before it proved itself.
	// +optional
	TriggeredAlerts []string `json:"triggeredAlerts,omitempty"`
	// held says why the build cannot go on in this target until a person
	// acts: the app's namespace there is protected (ProtectedNamespace) or
	// outside --app-namespace-policy (NamespaceNotAllowed), an object it
	// needs on a cluster exists and is not Picchu's (NotOwned), or a
	// port's host is one a cluster's ingress does not allow
	// (HostNotAllowed).
	// +optional
	Held *RevisionHold `json:"held,omitempty"`
	// ignoredRollback says why this target ignored the rollback request
	// to the revision (its picchu.medium.engineering/rollback annotation),
	// while the annotation holds that request.
	// +optional
	IgnoredRollback string `json:"ignoredRollback,omitempty"`
}

// RevisionHold is why a build holds in a target until a person acts.
type RevisionHold struct {
	// reason is ProtectedNamespace, NamespaceNotAllowed, NotOwned or
	// HostNotAllowed.
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
	// message names the namespace, object or host, and the cluster.
	// +kubebuilder:validation:MaxLength=4096
	Message string `json:"message"`
}

// RevisionScaleStatus counts replicas summed over a target's live clusters.
type RevisionScaleStatus struct {
	// current is the number of available replicas.
	Current int32 `json:"current"`
	// desired is the number of replicas asked for.
	Desired int32 `json:"desired"`
	// peak is the highest number of available replicas seen.
	Peak int32 `json:"peak"`
}

// RevisionReleaseStatus holds a revision's share of traffic in a target.
type RevisionReleaseStatus struct {
	// currentPercent is the percent of traffic the revision takes now.
	CurrentPercent int32 `json:"currentPercent"`
	// peakPercent is the highest percent of traffic it has taken.
	PeakPercent int32 `json:"peakPercent"`
	// wavesLeft says the target releases in waves and the revision is
	// releasing with waves left to reach its release.max in: it has not
	// proven itself there, whatever its peak.
	// +optional
	WavesLeft bool `json:"wavesLeft,omitempty"`
}

// +kubebuilder:object:root=true

// RevisionList is a list of Revisions.
type RevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Revision `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Revision{}, &RevisionList{})
}
