// Package harness starts real Kubernetes API servers for tests: one delivery
// cluster with Picchu's CRDs (and, on request, its admission webhooks served
// by the test process) and any number of target clusters with the real
// third-party CRDs Picchu writes (Istio networking, prometheus-operator
// monitoring, KEDA, Sloth). Each target is registered on the delivery cluster
// the way a user registers one: a Cluster with spec.config and the fleet
// label, and a Secret of the same name whose auth-info key holds a kubeconfig
// user (a client certificate for some targets, a bearer token for others).
// With Options.Controllers, each target also runs kube-controller-manager
// (ReplicaSets, HorizontalPodAutoscalers, garbage collection), kube-scheduler
// and kwok with fake nodes, so that ReplicaSets get Running and Ready pods.
//
// Main is the TestMain of a package whose tests share one Env; its setup
// may have the targets' ReplicaSets reported available
// (Suite.ServeReplicaSets) and run the operator (inprocess.Run). What both
// tiers of tests share (Prometheus, traffic, rules, waits) is in test/kit.
package harness
