package controllers

// The permissions the operator needs in the delivery cluster. Permissions on
// target clusters come from the credentials registered with each Cluster.
//
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=revisions;releasemanagers;clusters;clustersecrets;mirrors;faultinjectors,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=revisions/status;releasemanagers/status;clusters/status;clustersecrets/status;mirrors/status;faultinjectors/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=revisions/finalizers;releasemanagers/finalizers;clusters/finalizers;clustersecrets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
