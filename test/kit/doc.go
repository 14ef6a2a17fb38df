// Package kit is what both tiers of Picchu's tests share: the in-process
// tier (test/integration: envtest API servers and the operator in the test
// process) and the out-of-process tier (test/e2e: a kwok fleet, the mesh and
// the operator as processes).
//
//   - paths.go: the repository's root, the Kubernetes binaries built under
//     bin/ and the third-party CRDs read from their Go modules;
//   - wait.go and ports.go: the one wait helper and the one free-port helper;
//   - checks.go: checks for Eventually (a Lease held, a Cluster Ready);
//   - logs.go: the end of a process's log, to explain a failure;
//   - prometheus.go: the one way a real Prometheus is configured and started,
//     as a child of the test (Prometheus) or as the fleet's daemon
//     (WritePrometheusConfig, PrometheusArgs);
//   - rules.go: prometheus-operator played for a test: the PrometheusRules of
//     clusters loaded into Prometheus (RuleSync, PrometheusFiles);
//   - traffic.go: the one traffic simulator, Istio's request counters of each
//     cluster, app and tag at the rates a test or the mesh sets;
//   - process.go: the one way a child process of a test is started, watched
//     and stopped (SIGTERM, then SIGKILL), its output in a log;
//   - clusters.go: reading several clusters at once, and logging each one's
//     failures once;
//   - register.go: a target registered on the delivery cluster as a user
//     registers one (a Cluster and its Secret);
//   - builds.go: the one Revision builder of the tests (Apps.Revision and
//     its options), reading a ReleaseManager, waiting for a build's state
//     (Apps.WaitState) and writing a release record (Apps.Record);
//   - registry.go: the one image registry of the tests, in memory over TLS
//     (StartRegistry), and images of a platform to push to it.
package kit
