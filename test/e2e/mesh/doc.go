// Package mesh plays the users and the Istio mesh of the local demo fleet,
// where fake (kwok) clusters serve no real traffic.
//
// Every interval a Mesh reads the VirtualServices, or the Gateway API
// HTTPRoutes, Picchu wrote on each target cluster and, for each app, sends
// it requests split between its tags by the weights of the app's release
// route, as Istio or a Gateway API implementation would. It counts them
// in istio_requests_total, as the destinations' sidecars would report them,
// failing a ratio of each tag's requests that a test or a person sets through
// its HTTP API, on every cluster or on one (a build failing in one region). Prometheus scrapes its /metrics endpoint, so that the alert
// rules Picchu writes see the canaries and ramps it runs.
//
// As those proxies do, a Mesh applies a route change some time after it is
// written: the weights read take effect Options.Lag later (DefaultLag, a
// second). The requests to an app that had a route on a cluster and has
// none are counted as unrouted (mesh_unrouted_requests_total). Every
// interval it also lists the pods of every build on each cluster, in one
// request, and counts the requests it sends to a build with no ready pod
// there (mesh_requests_to_unready_total, GET /unready, UnreadyRequests):
// those of a build whose pods went before its last route reached the
// traffic.
//
// With Options.Rules a Mesh also plays prometheus-operator: it loads the
// union of the PrometheusRules of every cluster into Prometheus (see
// kit.PrometheusFiles for a Prometheus started elsewhere).
package mesh
