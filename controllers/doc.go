// Package controllers is the wing of Picchu's reconcilers, and what they
// share. Each reconciler has its own package: cluster (target clusters'
// credentials and health), revision (a Revision's labels, ReleaseManagers,
// failure, deletion and status), releasemanager (an app in one target:
// observe, decide, act, report), clustersecrets (Secrets copied to target
// clusters), mirror (Revisions copied to another delivery cluster) and
// silencer (the Alertmanager silences of releases). The decisions they take
// are pure, under decide/; what a release puts on a cluster, and how, is
// under plan/; access to the target clusters under fleet/; the outside
// services under integrations/. This package holds the little the
// reconcilers share: the index of Revisions by app, the report of objects
// whose stored values the Go types cannot hold, the source of
// notifications from target clusters' caches, the cache of the delivery
// cluster's ExternalSecrets, and which namespaces a ClusterSecrets or
// Mirror may copy from (SourcesAllowed).
package controllers
