package mirror

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/redact"
)

// target is a mirror cluster as one run uses it: reads go to its API
// server (the registry's caches hold only what carries an app label, and
// copies need not), and happen only for copies not known to be current.
type target struct {
	// key is the Cluster's.
	key    types.NamespacedName
	reader client.Reader
	writer client.Client
	mapper meta.RESTMapper
}

// copyKey is one copy on one mirror cluster.
type copyKey struct {
	cluster         types.NamespacedName
	gvk             schema.GroupVersionKind
	namespace, name string
}

// written is what a Mirror last applied to a copy, or found there, and when.
type written struct {
	mirror Origin
	hash   string
	at     time.Time
}

// memo is what the Mirrors wrote on each mirror cluster, so that a copy
// whose content has not changed is neither read nor written again within
// the resync period, and which copies to delete when their source goes.
// A cluster's entries go with the registry's client of it (a mirror that
// comes back is checked again in full).
type memo struct {
	mu     sync.Mutex
	copies map[copyKey]written
	// listed is when each Mirror's copies were last listed on its cluster.
	listed map[types.NamespacedName]listing
}

type listing struct {
	cluster types.NamespacedName
	at      time.Time
}

// fresh says whether key holds hash, as written or checked within ttl.
func (m *memo) fresh(key copyKey, hash string, now time.Time, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.copies[key]
	return ok && w.hash == hash && now.Sub(w.at) < ttl
}

func (m *memo) put(key copyKey, w written) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.copies == nil {
		m.copies = map[copyKey]written{}
	}
	m.copies[key] = w
}

func (m *memo) drop(key copyKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.copies, key)
}

// of returns the copies mirror wrote on cluster, namespaces left out.
func (m *memo) of(cluster types.NamespacedName, mirror Origin) []copyKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []copyKey
	for k, w := range m.copies {
		if k.cluster == cluster && w.mirror == mirror && k.gvk != namespaceKind {
			out = append(out, k)
		}
	}
	return out
}

// listDue says whether mirror's copies on cluster are to be listed: never
// listed there, or not within ttl.
func (m *memo) listDue(mirror, cluster types.NamespacedName, now time.Time, ttl time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.listed[mirror]
	return !ok || l.cluster != cluster || now.Sub(l.at) >= ttl
}

func (m *memo) setListed(mirror, cluster types.NamespacedName, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.listed == nil {
		m.listed = map[types.NamespacedName]listing{}
	}
	m.listed[mirror] = listing{cluster: cluster, at: now}
}

// forgetCluster drops everything known of cluster.
func (m *memo) forgetCluster(cluster types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.copies {
		if k.cluster == cluster {
			delete(m.copies, k)
		}
	}
	for mirror, l := range m.listed {
		if l.cluster == cluster {
			delete(m.listed, mirror)
		}
	}
}

// forgetMirror drops everything known of a Mirror: its copies stay where
// they are, no longer kept.
func (m *memo) forgetMirror(mirror types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.copies {
		if w.mirror.NamespacedName == mirror {
			delete(m.copies, k)
		}
	}
	delete(m.listed, mirror)
}

// notServedError is a copy of a kind the mirror does not serve.
type notServedError struct {
	gvk     schema.GroupVersionKind
	cluster types.NamespacedName
}

func (e *notServedError) Error() string {
	return fmt.Sprintf("cluster %s does not serve %s %s: install its CRD there", e.cluster, e.gvk.GroupVersion(), e.gvk.Kind)
}

// NotOwnedError is an object on a mirror, where a copy would go, that the
// Mirror did not write: it is neither overwritten nor deleted.
type NotOwnedError struct {
	// Object is the kind, namespace and name of the object.
	Object  string
	Cluster types.NamespacedName
	Mirror  types.NamespacedName
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s exists on cluster %s and was not copied by Mirror %s: it is not overwritten; "+
		"delete it there, or label it %s=true and annotate it %s=%s for the Mirror to keep it",
		e.Object, e.Cluster, e.Mirror, LabelMirrored, AnnotationMirror, e.Mirror)
}

// ensureNamespace creates namespace on the mirror unless it is there.
func (r *Reconciler) ensureNamespace(ctx context.Context, t *target, mirror Origin, namespace string, now time.Time) error {
	key := copyKey{cluster: t.key, gvk: namespaceKind, name: namespace}
	if r.memo.fresh(key, "", now, r.resync()) {
		return nil
	}
	ns := &unstructured.Unstructured{}
	ns.SetGroupVersionKind(namespaceKind)
	ns.SetName(namespace)
	err := t.reader.Get(ctx, client.ObjectKey{Name: namespace}, ns)
	if apierrors.IsNotFound(err) {
		err = t.writer.Create(ctx, ns)
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("ensuring namespace %s on cluster %s: %w", namespace, t.key, err)
	}
	r.memo.put(key, written{mirror: mirror, at: now})
	return nil
}

// put makes the mirror hold desired, a copy: nothing is sent when it was
// written or found current within the resync period and has not changed
// since; otherwise the live object is read, and applied only when it does
// not hold the copy (Unchanged). A live object labelled
// picchu.medium.engineering/ignore is left as it is; one the Mirror did
// not write is a *NotOwnedError.
func (r *Reconciler) put(ctx context.Context, t *target, mirror Origin, desired *unstructured.Unstructured, now time.Time) error {
	gvk := desired.GroupVersionKind()
	key := copyKey{cluster: t.key, gvk: gvk, namespace: desired.GetNamespace(), name: desired.GetName()}
	hash := Hash(desired)
	if r.memo.fresh(key, hash, now, r.resync()) {
		return nil
	}
	what := fmt.Sprintf("%s %s/%s on cluster %s", gvk.Kind, key.namespace, key.name, t.key)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	switch err := t.reader.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, live); {
	case meta.IsNoMatchError(err):
		return &notServedError{gvk: gvk, cluster: t.key}
	case apierrors.IsNotFound(err):
	case err != nil:
		return failed(gvk, "reading", what, err)
	case picchuv1alpha1.Ignored(live.GetLabels()):
		r.memo.put(key, written{mirror: mirror, hash: hash, at: now})
		return nil
	case !Ours(live, mirror):
		return &NotOwnedError{Object: fmt.Sprintf("%s %s/%s", gvk.Kind, key.namespace, key.name), Cluster: t.key, Mirror: mirror.NamespacedName}
	case Unchanged(desired, live):
		r.memo.put(key, written{mirror: mirror, hash: hash, at: now})
		return nil
	}
	err := t.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(FieldManager), client.ForceOwnership)
	if meta.IsNoMatchError(err) {
		return &notServedError{gvk: gvk, cluster: t.key}
	}
	if err != nil {
		return failed(gvk, "applying", what, err)
	}
	r.memo.put(key, written{mirror: mirror, hash: hash, at: now})
	return nil
}

// remove deletes the copy key from the mirror if it is there and mirror
// wrote it (and it is not labelled picchu.medium.engineering/ignore), and
// reports whether it did.
func (r *Reconciler) remove(ctx context.Context, t *target, mirror Origin, key copyKey) (bool, error) {
	what := fmt.Sprintf("%s %s/%s on cluster %s", key.gvk.Kind, key.namespace, key.name, t.key)
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(key.gvk)
	err := t.reader.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, live)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		r.memo.drop(key)
		return false, nil
	case err != nil:
		return false, failed(key.gvk, "reading", what, err)
	case !Ours(live, mirror):
		r.memo.drop(key)
		return false, nil
	case picchuv1alpha1.Ignored(live.GetLabels()):
		return false, nil
	}
	uid := live.GetUID()
	if err := t.writer.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return false, failed(key.gvk, "deleting", what, err)
	}
	r.memo.drop(key)
	return true, nil
}

// failed is err, from doing verb to the copy what, of kind gvk. A
// Secret's is told as package redact tells it: the mirror's answer, or an
// admission policy's there, may quote the values sent, and it becomes the
// Mirror's status.
func failed(gvk schema.GroupVersionKind, verb, what string, err error) error {
	if gvk == SecretKind {
		return redact.Wrap(err, "%s %s", verb, what)
	}
	return fmt.Errorf("%s %s: %w", verb, what, err)
}

// listCopies lists the copies mirror wrote of gvk in namespace on the mirror.
func listCopies(ctx context.Context, t *target, mirror Origin, gvk schema.GroupVersionKind, namespace string) ([]copyKey, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := t.reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{LabelMirrored: "true"})
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the copies of %s in %s on cluster %s: %w", gvk.Kind, namespace, t.key, err)
	}
	var out []copyKey
	for i := range list.Items {
		if Ours(&list.Items[i], mirror) {
			out = append(out, copyKey{cluster: t.key, gvk: gvk, namespace: namespace, name: list.Items[i].GetName()})
		}
	}
	return out, nil
}
