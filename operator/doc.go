// Package operator assembles Picchu: the scheme its clients use, the
// delivery cluster's cache, the alert sources, the registry of target
// clusters (fleet/access) and the six reconcilers (Cluster, Revision,
// ReleaseManager, ClusterSecrets, Mirror and the silencer), wired once.
// main.go runs it from the command line; tests that run the operator
// in-process run this same assembly.
package operator
