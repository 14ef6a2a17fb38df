package applier

import (
	"bytes"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepReplicasOwner is the transform of a target cluster's cache: it drops
// every managed field of every object before the object is stored, but
// the one fact Picchu reads back from them: that FieldManager applied
// spec.replicas and ReplicasFieldManager did not (TakeOverReplicas: an
// older Picchu's ReplicaSet), kept as FieldManager's entry holding that
// field alone. A ReplicaSet CreateScaled made has its replicas held by both
// until FieldManager's next write: ReplicasFieldManager's hold keeps them,
// and there is nothing to take over.
//
// Nothing else Picchu decides reads managed fields, and they are most of
// an object's size in a cache of unstructured objects (each field a map
// of its own): a ReplicaSet carries the ReplicaSet controller's status
// fields, an autoscaler its controller's, and Picchu's own entry names
// every field it applied. Picchu never writes a cached copy back to a
// target cluster (it applies the objects it builds, without managed
// fields, and deletes): an Update of a copy carrying the one entry kept
// would replace every manager's on the API server.
func KeepReplicasOwner(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object: nothing to drop
	}
	fields := obj.GetManagedFields()
	if len(fields) == 0 || (len(fields) == 1 && isReplicasOwner(fields[0])) {
		return in, nil
	}
	var kept []metav1.ManagedFieldsEntry
	if replicasAppliedBy(fields, FieldManager) && !replicasAppliedBy(fields, ReplicasFieldManager) {
		kept = []metav1.ManagedFieldsEntry{{
			Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: bytes.Clone(replicasOnly)},
		}}
	}
	obj.SetManagedFields(kept)
	return in, nil
}

// replicasOnly are the managed fields of spec.replicas alone.
var replicasOnly = []byte(`{"f:spec":{"f:replicas":{}}}`)

// isReplicasOwner says mf is the entry KeepReplicasOwner keeps.
func isReplicasOwner(mf metav1.ManagedFieldsEntry) bool {
	return mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply &&
		mf.Subresource == "" && mf.FieldsV1 != nil && bytes.Equal(mf.FieldsV1.Raw, replicasOnly)
}
