// Package releasemanager is the ReleaseManager reconciler: the release of
// one app in one target, on every cluster of the target's fleet. Each run
// takes a snapshot (Revisions, status, what the clusters run), decides each
// build's next state with package release, acts on every cluster at once
// through package applier with objects from package manifests, and records
// the status, events and metrics.
package releasemanager
