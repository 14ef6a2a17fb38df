package controllers

import "slices"

// SourcesAllowed says whether an object of namespace home (a ClusterSecrets,
// a Mirror) may copy the Secrets and ConfigMaps of namespace source: those
// of its own namespace, and those of the namespaces in allowed (the
// operator's --allow-cross-namespace-sources). Whoever may write such an
// object in one namespace chooses where its copies go; without this check
// they could copy another namespace's Secrets, which they may not read, to
// a cluster they control.
func SourcesAllowed(home, source string, allowed []string) bool {
	return source == home || slices.Contains(allowed, source)
}
