package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func TestMetadataOrSpecChanged(t *testing.T) {
	now := metav1.Now()
	base := func() *picchuv1alpha1.Revision {
		return &picchuv1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{
			Name: "app-v1", Generation: 1,
			Labels:      map[string]string{"a": "1"},
			Annotations: map[string]string{"n": "1"},
			Finalizers:  []string{"x"},
		}}
	}
	cases := []struct {
		name   string
		change func(*picchuv1alpha1.Revision)
		with   MetadataChanges
		want   bool
	}{
		{"status only", func(r *picchuv1alpha1.Revision) { r.Status.Conditions = []metav1.Condition{{Type: "Ready"}} }, MetadataChanges{}, false},
		{"status only, everything asked", func(r *picchuv1alpha1.Revision) { r.ResourceVersion = "9" }, MetadataChanges{Annotations: true, FinalizerCount: true}, false},
		{"generation", func(r *picchuv1alpha1.Revision) { r.Generation = 2 }, MetadataChanges{}, true},
		{"labels", func(r *picchuv1alpha1.Revision) { r.Labels["a"] = "2" }, MetadataChanges{}, true},
		{"deletion", func(r *picchuv1alpha1.Revision) { r.DeletionTimestamp = &now }, MetadataChanges{}, true},
		{"annotations, not asked", func(r *picchuv1alpha1.Revision) { r.Annotations["n"] = "2" }, MetadataChanges{}, false},
		{"annotations, asked", func(r *picchuv1alpha1.Revision) { r.Annotations["n"] = "2" }, MetadataChanges{Annotations: true}, true},
		{"finalizer swapped", func(r *picchuv1alpha1.Revision) { r.Finalizers = []string{"y"} }, MetadataChanges{}, true},
		{"finalizer swapped, counted", func(r *picchuv1alpha1.Revision) { r.Finalizers = []string{"y"} }, MetadataChanges{FinalizerCount: true}, false},
		{"finalizer added, counted", func(r *picchuv1alpha1.Revision) { r.Finalizers = append(r.Finalizers, "y") }, MetadataChanges{FinalizerCount: true}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, n := base(), base()
			c.change(n)
			if got := MetadataOrSpecChanged(c.with).Update(event.UpdateEvent{ObjectOld: o, ObjectNew: n}); got != c.want {
				t.Errorf("passed %v, want %v", got, c.want)
			}
		})
	}
}
