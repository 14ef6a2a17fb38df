// Package revision is the Revision reconciler: it labels each Revision,
// creates a ReleaseManager for each of its targets, fails it when a target
// timed out or its alerts fired before it proved itself, deletes it once
// every target is done with it, and mirrors the targets' states into its
// status. FailReason, TargetStatuses and Summary are the pure parts.
package revision
