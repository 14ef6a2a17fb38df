// Package applier is the contract between release decisions and target
// clusters. A Plan is applied to one Cluster at a time: it applies complete
// desired objects with server-side apply (field manager "picchu") and deletes
// objects it no longer wants. Cluster.Apply works for any kind without a type
// switch, sends nothing when the object already matches what was applied,
// and leaves alone live objects labelled picchu.medium.engineering/ignore.
// ApplyFleet runs a plan on every cluster of a fleet at once, each with its
// own timeout, and reports errors per cluster.
package applier
