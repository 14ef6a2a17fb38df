package applier_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/medium/picchu/plan/applier"
)

func entries(names ...string) []metav1.ManagedFieldsEntry {
	out := make([]metav1.ManagedFieldsEntry, 0, len(names))
	for _, n := range names {
		out = append(out, metav1.ManagedFieldsEntry{Manager: n, Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}})
	}
	return out
}

func names(fields []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, mf := range fields {
		out = append(out, mf.Manager)
	}
	return out
}

func TestKeepOwnManagedFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"others dropped, Picchu's kept in order", []string{"kube-controller-manager", applier.FieldManager, "kubectl", applier.ReplicasFieldManager},
			[]string{applier.FieldManager, applier.ReplicasFieldManager}},
		{"only others: none left", []string{"kube-controller-manager", "kubectl"}, nil},
		{"only Picchu's: unchanged", []string{applier.FieldManager}, []string{applier.FieldManager}},
		{"none", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typed := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "v1", ManagedFields: entries(tc.in...)}}
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			for _, obj := range []metav1.Object{typed, &unstructured.Unstructured{Object: content}} {
				out, err := applier.KeepOwnManagedFields(obj)
				if err != nil {
					t.Fatal(err)
				}
				if out != obj {
					t.Errorf("%T: a new object returned, want the same one transformed", obj)
				}
				if got := names(obj.GetManagedFields()); !slices.Equal(got, tc.want) {
					t.Errorf("%T: managers %v, want %v", obj, got, tc.want)
				}
				// Idempotent, as informers' transforms must be.
				if _, err := applier.KeepOwnManagedFields(obj); err != nil {
					t.Fatal(err)
				}
				if got := names(obj.GetManagedFields()); !slices.Equal(got, tc.want) {
					t.Errorf("%T, twice: managers %v, want %v", obj, got, tc.want)
				}
			}
		})
	}
	if out, err := applier.KeepOwnManagedFields("not an object"); err != nil || out != "not an object" {
		t.Errorf("a value without metadata: %v, %v; want it back unchanged", out, err)
	}
}
