// Package releasemanager is the ReleaseManager reconciler: the release of
// one app in one target, on every cluster of the target's fleet. Each run
// takes a snapshot (Revisions, status, what the clusters run), decides each
// build's next state with package release, plans each cluster (a
// plan.Cluster of objects from package manifests, purely), carries the
// plans out on every cluster at once through package applier, settles each
// build's step on what the clusters took, and records the status, events
// and metrics.
package releasemanager
