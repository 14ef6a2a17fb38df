// Package cluster is the Cluster reconciler: it registers each enabled
// target cluster's credentials with the remote registry, checks that the
// cluster answers, and reports Ready (Connected, Unreachable,
// InvalidCredentials, Disabled) on the Cluster.
package cluster
