// Package scope says which alerts and series are an app's own, so that the
// alert and traffic sources judge a build only on what Picchu itself wrote
// for it: the app's namespace on its targets, and the clusters of its fleet.
// A team sharing the Prometheus, the Alertmanager or the Datadog account
// with another cannot reach the other's verdicts through labels it writes.
package scope

import "slices"

// LabelNamespace is the label that names the namespace an alert or series
// comes from: the one prometheus-operator's ServiceMonitors set from the
// scraped target, its enforcedNamespaceLabel stamps on every rule and
// series of an app namespace's objects, and Picchu sets on every rule it
// writes.
const LabelNamespace = "namespace"

// App is an app on one target, as its alerts and series are selected.
type App struct {
	// Name is the app's name (its alerts' label app, its monitors' tag
	// app:<name>, the prefix of its SLOs' recorded series).
	Name string
	// Namespace is the app's namespace on every cluster of the target,
	// "<app>-<target>": only alerts and series labelled with it (a Datadog
	// monitor tagged namespace:<it>) are the app's.
	Namespace string
	// Clusters are the values of the cluster label of the target fleet's
	// clusters: an alert or series whose cluster label holds another value
	// comes from a cluster outside the fleet and is not the app's. One
	// without the label counts for every cluster (a Prometheus per
	// cluster, read directly). Nil: any value.
	Clusters []string
}

// InFleet says an alert or series whose cluster label holds value (""
// for none) may be the app's.
func (a App) InFleet(value string) bool {
	return value == "" || a.Clusters == nil || slices.Contains(a.Clusters, value)
}
