// Package clustersecrets is the ClusterSecrets reconciler: it copies the
// Secrets of the delivery cluster that a ClusterSecrets selects to every
// enabled Cluster it selects, keeps the copies in step with their sources,
// removes the copies it made once they are no longer wanted, and reports
// per cluster in the ClusterSecrets' status.
//
// The decisions are pure: Parse (the spec, whose selectors never panic),
// SelectSecrets and SelectClusters (what goes where), Copies and Diff (what
// to create, update, replace and delete on one cluster) and SetConditions
// (Ready, Reconciling and Stalled). Its errors are told as package redact
// tells them, without what an API server may have echoed of a Secret's
// values. The Reconciler reads only caches in the steady state: the
// delivery cluster's, and one cache per target cluster of the copies
// (Secrets labelled LabelOwner), built on the access.Registry's client of
// that cluster.
package clustersecrets
