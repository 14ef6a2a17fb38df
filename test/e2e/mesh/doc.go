// Package mesh plays the users and the Istio mesh of the local demo fleet,
// where fake (kwok) clusters serve no real traffic.
//
// Every interval a Mesh reads the VirtualServices, or the Gateway API
// HTTPRoutes, Picchu wrote on each target cluster and, for each app, sends
// it requests split between its tags by the weights of the app's release
// route, as Istio or a Gateway API implementation would; the requests to an
// app that had a route on a cluster and has none are counted as unrouted
// (mesh_unrouted_requests_total). It counts them
// in istio_requests_total, as the destinations' sidecars would report them,
// failing a ratio of each tag's requests that a test or a person sets through
// its HTTP API, on every cluster or on one (a build failing in one region). Prometheus scrapes its /metrics endpoint, so that the alert
// rules Picchu writes see the canaries and ramps it runs.
//
// With Options.Rules a Mesh also plays prometheus-operator: it loads the
// union of the PrometheusRules of every cluster into Prometheus (see
// kit.PrometheusFiles for a Prometheus started elsewhere).
package mesh
