// Package plan holds Picchu's concrete plans: what each object of a release
// (namespace, ReplicaSet, Service, DestinationRule, VirtualService,
// autoscalers, monitoring rules) looks like on a target cluster.
package plan
