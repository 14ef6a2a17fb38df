package applier_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func replicaSet(ns string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{picchuv1alpha1.LabelApp: "demo", picchuv1alpha1.LabelTag: "v1"}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: ns, Labels: labels},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "demo", Image: "demo:v1"}}},
			},
		},
	}
}

// TestCluster_StatusThatMovesCostsNoWrite applies a ReplicaSet, has its
// status move twice as a ReplicaSet controller would, and applies it again
// unchanged: no write. Another writer changing its spec is corrected with
// one write.
func TestCluster_StatusThatMovesCostsNoWrite(t *testing.T) {
	ctx := context.Background()
	cs, w := clusters(t)
	c := cs[0]
	ns := namespace(t, cs[:1])
	if err := c.Apply(ctx, replicaSet(ns, 2)); err != nil {
		t.Fatal(err)
	}
	// Written by a client that is not counted, as the controller would.
	other := env.Targets[0].Client
	key := client.ObjectKey{Namespace: ns, Name: "v1"}
	for ready := int32(1); ready <= 2; ready++ {
		rs := &appsv1.ReplicaSet{}
		if err := other.Get(ctx, key, rs); err != nil {
			t.Fatal(err)
		}
		rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: ready, AvailableReplicas: ready, ObservedGeneration: rs.Generation}
		if err := other.Status().Update(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}

	before := w.total()
	for range 3 {
		if err := c.Apply(ctx, replicaSet(ns, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.total() - before; got != 0 {
		t.Errorf("re-applying a ReplicaSet whose status moved wrote %d times, want 0", got)
	}

	scale := []byte(`{"spec":{"replicas":5}}`)
	if err := other.Patch(ctx, replicaSet(ns, 0), client.RawPatch(types.MergePatchType, scale), client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	before = w.total()
	if err := c.Apply(ctx, replicaSet(ns, 2)); err != nil {
		t.Fatal(err)
	}
	if got := w.total() - before; got != 1 {
		t.Errorf("re-applying after another writer changed the spec wrote %d times, want 1", got)
	}
	rs := &appsv1.ReplicaSet{}
	if err := other.Get(ctx, key, rs); err != nil {
		t.Fatal(err)
	}
	if *rs.Spec.Replicas != 2 {
		t.Errorf("replicas %d after the correction, want 2", *rs.Spec.Replicas)
	}
}
