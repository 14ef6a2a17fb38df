// Package release holds Picchu's release decisions as pure functions of a
// snapshot: the state of each incarnation (one build of an app in a target),
// what the fleet's ReplicaSets show, the traffic each build gets and the
// replicas it needs on each cluster. Nothing here reads a clock or a client:
// time and observations are inputs, so every decision is table-tested.
package release
