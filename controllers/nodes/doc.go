// Package nodes keeps, per target cluster, a small cache of its Nodes,
// reduced to what placement needs (their os and architecture labels,
// readiness and schedulability), and says which platforms the cluster's
// ready nodes run. The remote.Registry's caches hold only objects labelled
// with an app, so they cannot serve Nodes.
package nodes
