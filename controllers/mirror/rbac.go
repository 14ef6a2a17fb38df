package mirror

// The permissions the Mirror controller needs in the delivery cluster
// (ClusterRole picchu; docs/security.md lists them). It reads Revisions,
// ReleaseManagers, Clusters, and the Secrets, ConfigMaps and
// ExternalSecrets of the operator's namespaces with the other
// controllers' permissions (see package controllers). Permissions on a
// mirror come from the credentials registered with its Cluster
// (docs/mirror.md).
//
// Mirrors are read, and their status written (patch).
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=mirrors,verbs=get;list;watch
// +kubebuilder:rbac:groups=picchu.medium.engineering,resources=mirrors/status,verbs=patch
