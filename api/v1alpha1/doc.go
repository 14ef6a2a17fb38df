// Package v1alpha1 holds Picchu's API: the picchu.medium.engineering/v1alpha1
// group with the kinds Revision, ReleaseManager, Cluster, ClusterSecrets,
// Mirror and FaultInjector.
//
// The field names, JSON names and types are those of the original Picchu
// operator, so every manifest written for it applies unchanged. Defaults live
// in the CRD schema (so they are visible in the stored object and hold without
// any webhook), and so does every validation rule that a schema can express
// (enums, bounds, patterns and CEL rules). The Revision webhook adds what needs
// code: ingress defaulting and checks that parse values.
//
// +kubebuilder:object:generate=true
// +groupName=picchu.medium.engineering
package v1alpha1
