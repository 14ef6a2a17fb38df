// Package manifests holds what each object of a release
// (namespace, ReplicaSet, Service, PDB, DestinationRule, VirtualService,
// autoscalers, monitoring rules) looks like on a target cluster. Each builder
// is a pure function of its input: it returns the complete desired object,
// which applier.Cluster applies with server-side apply.
package manifests
