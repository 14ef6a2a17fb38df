package controllers

import (
	"maps"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// MetadataChanges says which changes of an object's metadata, besides its
// generation, labels and deletion, MetadataOrSpecChanged lets through.
type MetadataChanges struct {
	// Annotations lets a change of the annotations through.
	Annotations bool
	// FinalizerCount compares the finalizers by their number alone: a
	// finalizer swapped for another passes nothing. Otherwise any change
	// of the list passes.
	FinalizerCount bool
}

// MetadataOrSpecChanged lets through creations, deletions and updates that
// change more than the status, so a reconciler's own status writes bring
// it no run: a new generation (the spec changed), or labels, a deletion
// timestamp or finalizers that changed, and whatever else with asks for.
func MetadataOrSpecChanged(with MetadataChanges) predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		finalizersChanged := !slices.Equal(o.GetFinalizers(), n.GetFinalizers())
		if with.FinalizerCount {
			finalizersChanged = len(o.GetFinalizers()) != len(n.GetFinalizers())
		}
		return o.GetGeneration() != n.GetGeneration() ||
			!maps.Equal(o.GetLabels(), n.GetLabels()) ||
			(with.Annotations && !maps.Equal(o.GetAnnotations(), n.GetAnnotations())) ||
			!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) ||
			finalizersChanged
	}}
}
