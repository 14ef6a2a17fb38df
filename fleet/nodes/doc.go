// Package nodes keeps, per target cluster, a small cache of its Nodes,
// reduced to what placement and room need (labels, taints, readiness,
// schedulability, allocatable), and of the pods bound to them, reduced to
// what they ask of their node. It says which platforms the cluster's ready
// nodes run, and gives what the pre-flight capacity check counts room
// from. The access.Registry's caches hold only objects labelled with an
// app, so they cannot serve Nodes, nor other apps' pods.
package nodes
