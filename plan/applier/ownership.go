package applier

import (
	"fmt"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Owner is who writes through a Cluster: one Picchu (its instance ID) for
// one delivery namespace (the namespace of the Cluster object). Every
// object it applies carries its marker labels, and it writes over or
// deletes only objects whose marker is its own.
type Owner struct {
	// Instance identifies the Picchu (--instance-id). Empty stamps no
	// instance label, and then owns no object another instance marked.
	Instance string
	// Namespace is the delivery namespace.
	Namespace string
}

// Labels are the marker labels the owner stamps on what it applies.
func (o Owner) Labels() map[string]string {
	l := map[string]string{picchuv1alpha1.LabelDeliveryNamespace: o.Namespace}
	if o.Instance != "" {
		l[picchuv1alpha1.LabelInstance] = o.Instance
	}
	return l
}

// markerLabels are the labels that say which Picchu, for which delivery
// namespace, wrote an object.
var markerLabels = []string{picchuv1alpha1.LabelInstance, picchuv1alpha1.LabelDeliveryNamespace}

// Owns says whether the owner may write over, or delete, a live object
// with labels live when it wants one with labels want. Only objects Picchu
// created are ever touched:
//
//   - the live object carries an app label (Picchu labels everything it
//     creates for an app; a namespace or object someone else made carries
//     none, and a cache that holds only labelled objects does not see it);
//   - it carries the app and target want names, when want names them;
//   - each marker label it carries (instance, delivery namespace) is the
//     owner's. An object without them was written before Picchu marked its
//     objects, by this Picchu or the original, and is adopted: the next
//     apply marks it.
//
// The ignore label is not looked at here: an ignored object is left alone
// whoever owns it.
func (o Owner) Owns(want, live map[string]string) bool {
	if live[picchuv1alpha1.LabelApp] == "" {
		return false
	}
	for _, l := range []string{picchuv1alpha1.LabelApp, picchuv1alpha1.LabelTarget} {
		if v, ok := want[l]; ok && live[l] != v {
			return false
		}
	}
	ours := o.Labels()
	for _, l := range markerLabels {
		if v, ok := live[l]; ok && v != ours[l] {
			return false
		}
	}
	return true
}

// NotOwnedError is an object that exists on a cluster but was not created by
// this Picchu, for this delivery namespace, for the app and target that
// want it: Picchu leaves it alone, and the build that needs it holds until a
// person renames or removes one of them.
type NotOwnedError struct {
	// Object is the kind, namespace and name of the object.
	Object string
	// Labels are the owner labels Picchu wanted; Live those the object has.
	Labels, Live map[string]string
	// Owner is who wanted to write it.
	Owner Owner
}

func (e *NotOwnedError) Error() string {
	app, target := e.Labels[picchuv1alpha1.LabelApp], e.Labels[picchuv1alpha1.LabelTarget]
	var whose string
	switch {
	case e.Live[picchuv1alpha1.LabelApp] == "":
		whose = "it carries no Picchu app label"
	case e.Live[picchuv1alpha1.LabelApp] != app || e.Live[picchuv1alpha1.LabelTarget] != target:
		whose = fmt.Sprintf("it has app %q, target %q", e.Live[picchuv1alpha1.LabelApp], e.Live[picchuv1alpha1.LabelTarget])
	default:
		whose = fmt.Sprintf("another Picchu wrote it (instance %q, delivery namespace %q)",
			e.Live[picchuv1alpha1.LabelInstance], e.Live[picchuv1alpha1.LabelDeliveryNamespace])
	}
	return fmt.Sprintf("%s exists and was not created by Picchu for app %q in target %q (%s): "+
		"Picchu neither adopts nor deletes it; rename the app or target, or remove the object", e.Object, app, target, whose)
}
