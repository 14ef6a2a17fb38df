// Package kubevalidation checks that what Picchu's admission accepts, its
// object builders (plan/manifests) turn into objects Kubernetes accepts.
//
// Admission is the delivery API server's create path for a Revision, run in
// process from the CRD in config/crd/bases: pruning and defaulting by the
// schema, Picchu's mutating webhook, the schema's validation and CEL rules
// (the apiextensions-apiserver strategy the API server uses), and Picchu's
// validating webhook. Validate runs a target cluster's create path on an
// object: the scheme's defaults, conversion to the internal types, and the
// registry strategy of its kind (k8s.io/kubernetes/pkg/registry), which
// calls the validation packages (k8s.io/kubernetes/pkg/apis/.../validation)
// and validates its metadata, as the API server does.
//
// FuzzBuildersPassKubernetesValidation builds a Revision from the fuzzer's
// input, and, when admission accepts it, every core object the builders
// make of it for one target cluster, and the pod the ReplicaSet controller
// makes from its ReplicaSet, each of which Kubernetes must accept.
//
// This is its own Go module because the main module does not depend on
// k8s.io/kubernetes; not hack/k8s, whose versions build the test clusters'
// binaries and must not move with Picchu's dependencies.
package kubevalidation
