package clustersecrets

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Actions are what one cluster needs so that its copies are those wanted.
type Actions struct {
	// Create are copies to create.
	Create []*corev1.Secret
	// Update are live copies of the owner's with the wanted data, labels and
	// annotations (and the live resourceVersion, so a stale read conflicts).
	Update []*corev1.Secret
	// Replace are copies to delete and create again: their type changed, or
	// the live copy is immutable and its data changed.
	Replace []Replacement
	// Delete are live copies of the owner's no longer wanted.
	Delete []*corev1.Secret
	// Conflicts name the copies that cannot be written: another
	// ClusterSecrets' copy holds the name. Picchu neither adopts nor
	// deletes it.
	Conflicts []string
}

// Replacement is a live copy and the copy that takes its place.
type Replacement struct {
	Live, Want *corev1.Secret
}

// Empty says whether there is nothing to do.
func (a Actions) Empty() bool {
	return len(a.Create)+len(a.Update)+len(a.Replace)+len(a.Delete)+len(a.Conflicts) == 0
}

// Diff compares the copies wanted on a cluster (none on a cluster the
// owner does not select) with live, the cluster's Secrets that carry
// LabelOwner (the copies of every ClusterSecrets), and says what to do.
// Only copies whose AnnotationOwner is owner are updated or deleted; a live
// object labelled picchu.medium.engineering/ignore is left alone; a copy
// being deleted is waited for (its deletion brings the next run). Every list
// is sorted by namespace and name.
func Diff(owner string, wanted []*corev1.Secret, live []corev1.Secret) Actions {
	byKey := make(map[types.NamespacedName]*corev1.Secret, len(live))
	for i := range live {
		byKey[keyOf(&live[i])] = &live[i]
	}
	var a Actions
	want := make(map[types.NamespacedName]bool, len(wanted))
	for _, w := range wanted {
		key := keyOf(w)
		want[key] = true
		l, ok := byKey[key]
		switch {
		case !ok:
			a.Create = append(a.Create, w)
		case ignored(l) || !l.DeletionTimestamp.IsZero():
		case !OwnedBy(l, owner):
			a.Conflicts = append(a.Conflicts, notOwned(key, l))
		case l.Type != w.Type || (isImmutable(l) && !sameData(l.Data, w.Data)):
			a.Replace = append(a.Replace, Replacement{Live: l, Want: w})
		case !Same(w, l):
			a.Update = append(a.Update, Updated(l, w))
		}
	}
	for i := range live {
		l := &live[i]
		if !want[keyOf(l)] && OwnedBy(l, owner) && !ignored(l) && l.DeletionTimestamp.IsZero() {
			a.Delete = append(a.Delete, l)
		}
	}
	byName := func(x, y *corev1.Secret) int { return strings.Compare(keyOf(x).String(), keyOf(y).String()) }
	for _, list := range [][]*corev1.Secret{a.Create, a.Update, a.Delete} {
		slices.SortFunc(list, byName)
	}
	slices.SortFunc(a.Replace, func(x, y Replacement) int { return byName(x.Want, y.Want) })
	slices.Sort(a.Conflicts)
	return a
}

// Same says whether the live copy l has what the wanted copy w has: type,
// data, labels and annotations.
func Same(w, l *corev1.Secret) bool {
	return w.Type == l.Type && sameData(w.Data, l.Data) &&
		maps.Equal(w.Labels, l.Labels) && maps.Equal(w.Annotations, l.Annotations)
}

// Updated is the live copy l with the data, labels and annotations of w.
func Updated(l, w *corev1.Secret) *corev1.Secret {
	u := l.DeepCopy()
	u.Data = maps.Clone(w.Data)
	u.StringData = nil
	u.Labels, u.Annotations = maps.Clone(w.Labels), maps.Clone(w.Annotations)
	return u
}

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func isImmutable(s *corev1.Secret) bool { return s.Immutable != nil && *s.Immutable }

func ignored(s *corev1.Secret) bool { return picchuv1alpha1.Ignored(s.Labels) }

func keyOf(s *corev1.Secret) types.NamespacedName {
	return types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// notOwned says that the Secret key exists and was not made by this
// ClusterSecrets, naming who made it if one did.
func notOwned(key types.NamespacedName, live *corev1.Secret) string {
	by := "was not created by this ClusterSecrets"
	if other := live.Annotations[AnnotationOwner]; other != "" {
		by = "is a copy of ClusterSecrets " + other
	}
	return fmt.Sprintf("Secret %s exists and %s: Picchu neither adopts nor deletes it", key, by)
}
