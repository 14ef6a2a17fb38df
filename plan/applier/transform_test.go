package applier_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/medium/picchu/plan/applier"
)

// entry is a managed fields entry of manager holding fields.
func entry(manager, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

const (
	replicasOnly = `{"f:spec":{"f:replicas":{}}}`
	template     = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{}}}}}`
	withReplicas = `{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{}}}}}`
)

// TestKeepReplicasOwner: a target cluster's cache keeps of an object's
// managed fields only that Picchu's main manager applied its replicas and
// its replicas manager did not (which TakeOverReplicas reads), as that
// manager's entry holding
// spec.replicas alone; nothing when it did not. Typed and unstructured
// objects alike, the same object transformed, twice the same as once.
func TestKeepReplicasOwner(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []metav1.ManagedFieldsEntry
		want []metav1.ManagedFieldsEntry
	}{
		{"an older Picchu applied the replicas: that alone is kept",
			[]metav1.ManagedFieldsEntry{entry("kube-controller-manager", `{"f:status":{}}`), entry(applier.FieldManager, withReplicas), entry("kubectl", template)},
			[]metav1.ManagedFieldsEntry{entry(applier.FieldManager, replicasOnly)}},
		{"Picchu's replicas manager holds them: nothing is kept",
			[]metav1.ManagedFieldsEntry{entry(applier.FieldManager, template), entry(applier.ReplicasFieldManager, replicasOnly)}, nil},
		{"just created, both of Picchu's managers hold them: nothing is kept",
			[]metav1.ManagedFieldsEntry{entry(applier.FieldManager, withReplicas), entry(applier.ReplicasFieldManager, replicasOnly)}, nil},
		{"another manager applied replicas: nothing is kept",
			[]metav1.ManagedFieldsEntry{entry("kubectl", withReplicas)}, nil},
		{"the main manager updated, not applied, replicas: nothing is kept",
			[]metav1.ManagedFieldsEntry{func() metav1.ManagedFieldsEntry {
				e := entry(applier.FieldManager, withReplicas)
				e.Operation = metav1.ManagedFieldsOperationUpdate
				return e
			}()}, nil},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typed := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "v1", ManagedFields: tc.in}}
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range []metav1.Object{typed, &unstructured.Unstructured{Object: content}} {
				for _, pass := range []string{"once", "twice"} {
					out, err := applier.KeepReplicasOwner(obj)
					if err != nil {
						t.Fatal(err)
					}
					if out != obj {
						t.Errorf("%T: a new object returned, want the same one transformed", obj)
					}
					if got := obj.GetManagedFields(); fmt.Sprint(got) != fmt.Sprint(tc.want) {
						t.Errorf("%T, %s: managed fields %v, want %v", obj, pass, got, tc.want)
					}
				}
			}
		})
	}
	if out, err := applier.KeepReplicasOwner("not an object"); err != nil || out != "not an object" {
		t.Errorf("a value without metadata: %v, %v; want it back unchanged", out, err)
	}
}
