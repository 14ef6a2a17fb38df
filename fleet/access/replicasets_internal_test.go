package access

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestReplicaSetMoved: a release runs on a ReplicaSet's changes that
// its decisions read, and on none of the ReplicaSet controller's other
// status updates.
func TestReplicaSetMoved(t *testing.T) {
	rs := func(replicas, available int32) *appsv1.ReplicaSet {
		out := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "v2", Generation: 3, Labels: map[string]string{"tag": "v2"}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
		out.Status.Replicas, out.Status.ReadyReplicas, out.Status.AvailableReplicas = available, available, available
		return out
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		change func(*appsv1.ReplicaSet)
		from   *appsv1.ReplicaSet
		want   bool
	}{
		{"a pod available: runs", func(r *appsv1.ReplicaSet) { r.Status.AvailableReplicas = 2 }, rs(2, 1), true},
		{"a pod lost: runs", func(r *appsv1.ReplicaSet) { r.Status.AvailableReplicas = 0 }, rs(2, 1), true},
		{"pods created, none ready: no run", func(r *appsv1.ReplicaSet) { r.Status.Replicas = 2 }, rs(2, 0), false},
		{"a pod ready, not yet available: no run", func(r *appsv1.ReplicaSet) { r.Status.ReadyReplicas = 2 }, rs(2, 1), false},
		{"the generation observed: no run", func(r *appsv1.ReplicaSet) { r.Status.ObservedGeneration = 3 }, rs(2, 2), false},
		{"a build scaled to nothing loses its pods: no run", func(r *appsv1.ReplicaSet) { r.Status.AvailableReplicas = 0 }, rs(0, 2), false},
		{"a build scaled to nothing gains pods: runs", func(r *appsv1.ReplicaSet) { r.Status.AvailableReplicas = 1 }, rs(0, 0), true},
		{"its spec: runs", func(r *appsv1.ReplicaSet) { r.Generation = 4 }, rs(2, 2), true},
		{"its labels: runs", func(r *appsv1.ReplicaSet) { r.Labels["tag"] = "v3" }, rs(2, 2), true},
		{"its annotations: runs", func(r *appsv1.ReplicaSet) { r.Annotations = map[string]string{"a": "b"} }, rs(2, 2), true},
		{"its deletion: runs", func(r *appsv1.ReplicaSet) { r.DeletionTimestamp = &now }, rs(2, 2), true},
		{"the replicas' owner: runs", func(r *appsv1.ReplicaSet) {
			r.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "picchu"}}
		}, rs(2, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to := tc.from.DeepCopy()
			tc.change(to)
			if got := replicaSetMoved(tc.from, to); got != tc.want {
				t.Errorf("replicaSetMoved = %t, want %t", got, tc.want)
			}
		})
	}
	if !replicaSetMoved(nil, rs(1, 1)) {
		t.Error("a change not of two ReplicaSets runs no release")
	}
}
