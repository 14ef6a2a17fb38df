package applier

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepOwnManagedFields is the transform of a target cluster's cache: it
// drops from every object the managed fields of every manager but
// FieldManager and ReplicasFieldManager before the object is stored.
//
// Nothing Picchu decides reads another manager's fields, and they are most
// of an object's size in a cache of unstructured objects (each field a map
// of its own): a ReplicaSet carries the ReplicaSet controller's status
// fields, an autoscaler its controller's. Picchu's own stay, for
// TakeOverReplicas. Picchu never writes a cached copy back to a target
// cluster (it applies the objects it builds, without managed fields, and
// deletes): an Update of a copy with only some managers' fields would
// drop the others' on the API server.
func KeepOwnManagedFields(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object: nothing to drop
	}
	fields := obj.GetManagedFields()
	own := slices.DeleteFunc(slices.Clone(fields), func(mf metav1.ManagedFieldsEntry) bool {
		return mf.Manager != FieldManager && mf.Manager != ReplicasFieldManager
	})
	if len(own) == len(fields) {
		return in, nil
	}
	if len(own) == 0 {
		own = nil
	}
	obj.SetManagedFields(own)
	return in, nil
}
