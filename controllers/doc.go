// Package controllers is the tree of Picchu's reconcilers and what they
// share. Each reconciler has its own package: cluster (target clusters and
// their clients), revision (a Revision's labels, ReleaseManagers, failure,
// deletion and status), releasemanager (an app in one target: snapshot,
// decide, act, record), clustersecrets (Secrets copied to target clusters)
// and mirror (Revisions copied to another delivery cluster). The decisions
// are pure, in release and schedule; what a release creates on a target is
// in manifests. This package holds the little they share: the index of
// Revisions by app, the report of objects whose stored values the Go types
// cannot hold, the source of notifications from target clusters' caches,
// the cache of the delivery cluster's ExternalSecrets, and which namespaces
// a ClusterSecrets or Mirror may copy from (SourcesAllowed).
package controllers
