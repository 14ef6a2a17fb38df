// Package plan is the contract between release decisions and target
// clusters: a Plan produces complete desired objects for one cluster, and
// appliers apply them with server-side apply (field manager "picchu") to every
// cluster of a fleet concurrently, each with its own timeout, reporting
// errors per cluster.
package plan
