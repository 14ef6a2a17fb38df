package controllers

// The permissions the operator needs in the delivery cluster, each verb for
// a write the code makes (docs/security.md lists them). Permissions on
// target clusters come from the credentials registered with each Cluster.
//
// Cluster-wide (ClusterRole picchu):
//
// Revisions: labelled, failed and marked deletable (patch), deleted when
// every target is done with them, and their status mirrored (patch).
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=revisions,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=revisions/status,verbs=patch
//
// ReleaseManagers: created per app and target, their finalizer updated,
// deleted when no Revision is left, and their status updated.
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=releasemanagers,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=releasemanagers/status,verbs=update
//
// Clusters: their finalizer (patch) and status (patch).
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clusters/status,verbs=patch
//
// FaultInjectors are only read. The ClusterSecrets and Mirror controllers'
// permissions are in their own packages (controllers/clustersecrets,
// controllers/mirror).
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=faultinjectors,verbs=get;list;watch
//
// The delivery cluster's kube-system namespace, read once at start: its UID
// is the default --instance-id.
// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get
//
// Events on Revisions and ReleaseManagers.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// In the operator's own namespace only (Role picchu, namespace "system",
// which kustomize renames): the Secrets and ConfigMaps of the Clusters and
// Revisions there (see DeliveryCache and --namespaces), the leader-election
// Lease and the events leader election records.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets;configmaps,verbs=get;list;watch
//
// The ExternalSecrets configSelectors select there too, read when the
// delivery cluster serves them (copied to the target clusters, never
// written here).
// +kubebuilder:rbac:groups=external-secrets.io,namespace=system,resources=externalsecrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;list;create;update;delete
// +kubebuilder:rbac:groups="",namespace=system,resources=events,verbs=create;patch
