package clustersecrets

// The delivery cluster's permissions of the ClusterSecrets controller
// (merged into config/rbac/role.yaml by make manifests). Permissions on
// target clusters come from each Cluster's credentials: there it lists and
// watches Secrets in every namespace (only those labelled LabelOwner are
// asked for), creates, updates and deletes its copies, and reads and
// creates the target namespace.
//
// ClusterSecrets: read, their finalizer added and removed (update, patch,
// and clustersecrets/finalizers where owner references are enforced), and
// their status written (patch).
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clustersecrets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clustersecrets/status,verbs=patch
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clustersecrets/finalizers,verbs=update
//
// Clusters, to know which are enabled and selected.
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=clusters,verbs=get;list;watch
//
// The source Secrets, read from the cache of the operator's namespaces
// (--namespaces; the shipped Role covers the operator's own namespace).
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;list;watch
//
// Events on ClusterSecrets.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
