// Package plan holds Picchu's concrete plans: what each object of a release
// (namespace, ReplicaSet, Service, PDB, DestinationRule, VirtualService,
// autoscalers, monitoring rules) looks like on a target cluster. Each builder
// is a pure function of its input: it returns the complete desired object,
// which plan.Cluster applies with server-side apply.
package plan
