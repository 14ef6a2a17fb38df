// Package preflight decides whether a target cluster is fit to take a new
// build's traffic: it answers (its circuit breaker is closed), its nodes
// have room for the build's pods, and none of the alerts its Cluster names
// fires. A failed check holds the build on that cluster, never fails it,
// and is made again on a backoff (RetryAfter).
//
// Nothing here reads a cluster, Prometheus or a clock: each check is a
// function of what the caller read (nodes and pods from a cache, a query's
// answer) and the time, table-tested without a server.
package preflight
