// Package prometheus answers which SLO and canary alerts fire for an app and
// tag, querying Prometheus (or Thanos) with a deadline on every query and a
// cache bounded in time and size.
package prometheus
