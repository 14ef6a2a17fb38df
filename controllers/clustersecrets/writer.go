package clustersecrets

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/redact"
)

// writer carries out the Actions of one ClusterSecrets on one cluster.
// Its errors say what was done to which object and why it failed, never
// with a value of a Secret (see redact.Describe).
type writer struct {
	// client writes to the cluster.
	client client.Client
	// reader reads the cluster itself, not a cache: only when a create
	// finds the name taken, and to check the target namespace before
	// creating copies in it.
	reader client.Reader
	// owner is the ClusterSecrets, "<namespace>/<name>".
	owner string

	// changes say what was written, by name.
	changes []string
	// conflicts are the copies found, on create, to be held by objects the
	// owner did not create.
	conflicts []string
}

// apply carries out a: deletions first (a copy no longer wanted goes even
// when creating others fails), then the target namespace when copies are
// created in it, replacements, updates and creations. It goes on after an
// error and returns them all.
func (w *writer) apply(ctx context.Context, a Actions) []error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range a.Delete {
		keep(w.delete(ctx, s))
	}
	for _, u := range a.Update {
		keep(w.update(ctx, u))
	}
	if len(a.Create)+len(a.Replace) == 0 {
		return errs
	}
	ns := ""
	if len(a.Create) > 0 {
		ns = a.Create[0].Namespace
	} else {
		ns = a.Replace[0].Want.Namespace
	}
	if err := w.ensureNamespace(ctx, ns); err != nil {
		return append(errs, err)
	}
	for _, r := range a.Replace {
		if err := w.delete(ctx, r.Live); err != nil {
			keep(err)
			continue
		}
		keep(w.create(ctx, r.Want))
	}
	for _, s := range a.Create {
		keep(w.create(ctx, s))
	}
	return errs
}

// ensureNamespace creates the namespace ns, labelled and annotated as the
// owner's, unless it exists. A namespace that exists is used as it is:
// Picchu neither adopts it nor ever deletes it.
func (w *writer) ensureNamespace(ctx context.Context, ns string) error {
	live := &corev1.Namespace{}
	err := w.reader.Get(ctx, client.ObjectKey{Name: ns}, live)
	switch {
	case err == nil && !live.DeletionTimestamp.IsZero():
		return fmt.Errorf("namespace %s is being deleted: the copies are created once it is gone", ns)
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return redact.Wrap(err, "reading namespace %s", ns)
	}
	created := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        ns,
		Labels:      map[string]string{LabelOwner: w.ownerLabel()},
		Annotations: map[string]string{AnnotationOwner: w.owner},
	}}
	if err := w.client.Create(ctx, created); err != nil && !apierrors.IsAlreadyExists(err) {
		return redact.Wrap(err, "creating namespace %s", ns)
	}
	w.changes = append(w.changes, "created namespace "+ns)
	return nil
}

// ownerLabel is the LabelOwner value of the owner.
func (w *writer) ownerLabel() string {
	owner, _ := parseOwner(w.owner)
	return OwnerLabelValue(owner.Namespace, owner.Name)
}

// create creates the copy s. When its name is taken, it reads the object
// there: a copy of the owner's the cache has not seen (or whose label was
// removed) is updated, an ignored one left alone, and anything else is a
// conflict.
func (w *writer) create(ctx context.Context, s *corev1.Secret) error {
	key := keyOf(s)
	err := w.client.Create(ctx, s.DeepCopy())
	if err == nil {
		w.changes = append(w.changes, "created "+key.String())
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return redact.Wrap(err, "creating Secret %s", key)
	}
	live := &corev1.Secret{}
	if err := w.reader.Get(ctx, key, live); err != nil {
		return redact.Wrap(err, "reading Secret %s, which exists", key)
	}
	switch {
	case ignored(live):
		return nil
	case !live.DeletionTimestamp.IsZero():
		return fmt.Errorf("Secret %s is being deleted: it is created again once it is gone", key)
	case !OwnedBy(live, w.owner):
		w.conflicts = append(w.conflicts, notOwned(key, live))
		return nil
	case live.Type != s.Type || isImmutable(live):
		if err := w.delete(ctx, live); err != nil {
			return err
		}
		return w.create(ctx, s)
	case Same(s, live):
		return nil
	}
	return w.update(ctx, Updated(live, s))
}

// update writes the live copy u, as read with its resourceVersion.
func (w *writer) update(ctx context.Context, u *corev1.Secret) error {
	if err := w.client.Update(ctx, u); err != nil {
		return redact.Wrap(err, "updating Secret %s", keyOf(u))
	}
	w.changes = append(w.changes, "updated "+keyOf(u).String())
	return nil
}

// delete deletes the live copy s, only if it is still the object read (its
// UID); one gone already is fine.
func (w *writer) delete(ctx context.Context, s *corev1.Secret) error {
	err := w.client.Delete(ctx, s, client.Preconditions{UID: &s.UID})
	if client.IgnoreNotFound(err) != nil {
		return redact.Wrap(err, "deleting Secret %s", keyOf(s))
	}
	if err == nil {
		w.changes = append(w.changes, "deleted "+keyOf(s).String())
	}
	return nil
}
