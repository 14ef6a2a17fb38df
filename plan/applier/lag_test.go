package applier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
)

// laggingCache is a cache that shows, of one object, the version it had
// when the cache was held (hold) until it is let go (catchUp): an informer
// whose watch runs behind the writes, as under load.
type laggingCache struct {
	client.Client
	mu   sync.Mutex
	held map[client.ObjectKey]client.Object
	// whole are the keys whose held object is shown whole, labels and
	// all, and even once it is gone from the API server (stale).
	whole map[client.ObjectKey]bool
}

// stale makes the cache show the object held for key as it was, whatever
// becomes of it: one deleted and made again is not seen.
func (l *laggingCache) stale(key client.ObjectKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.whole == nil {
		l.whole = map[client.ObjectKey]bool{}
	}
	l.whole[key] = true
}

func (l *laggingCache) hold(ctx context.Context, t *testing.T, key client.ObjectKey, obj client.Object) {
	t.Helper()
	if err := l.Client.Get(ctx, key, obj); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held[key] = obj
}

func (l *laggingCache) catchUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.held)
	clear(l.whole)
}

func (l *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.mu.Lock()
	held, ok := l.held[key]
	whole := l.whole[key]
	l.mu.Unlock()
	if !ok {
		return l.Client.Get(ctx, key, obj, opts...)
	}
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok && whole {
		// The applier reads metadata alone: it is shown as held.
		held.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta).DeepCopyInto(&m.ObjectMeta)
		return nil
	}
	if err := l.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	// What the cache shows of it is the version held.
	obj.SetGeneration(held.GetGeneration())
	obj.SetResourceVersion(held.GetResourceVersion())
	obj.SetUID(held.GetUID())
	return nil
}

// laggingCluster binds the first target with a laggingCache in front of
// its client, and counts the writes.
func laggingCluster(t *testing.T) (*applier.Cluster, *laggingCache, *writes) {
	t.Helper()
	cs, w := clusters(t)
	target := cs[0]
	lagging := &laggingCache{Client: target.Client, held: map[client.ObjectKey]client.Object{}}
	return applier.NewCluster(target.Cluster, lagging, target.Live, "", target.Log), lagging, w
}

// TestCluster_ACacheBehindItsOwnWriteCostsNoWrite: a cache that does not
// show Picchu's last write yet (an older generation of the object) is
// that write on its way: applying the same again sends nothing, where
// each run after a step would otherwise wait on the API server to write
// the step again. A newer generation (someone else's change) or another
// object of the same name is written over as before.
func TestCluster_ACacheBehindItsOwnWriteCostsNoWrite(t *testing.T) {
	ctx := context.Background()
	c, lagging, w := laggingCluster(t)
	ns := namespace(t, []*applier.Cluster{c})
	key := client.ObjectKey{Namespace: ns, Name: "demo"}
	if err := c.Apply(ctx, virtualService(ns, 90)); err != nil {
		t.Fatal(err)
	}
	lagging.hold(ctx, t, key, virtualService(ns, 0))
	before := w.total()
	if err := c.Apply(ctx, virtualService(ns, 50)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := c.Apply(ctx, virtualService(ns, 50)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.total() - before; got != 1 {
		t.Errorf("a step applied once, then again while the cache showed the version before it: %d writes, want 1", got)
	}

	// Someone else changes the spec; the cache shows it.
	lagging.catchUp()
	other := env.Targets[0].Client
	if err := other.Patch(ctx, virtualService(ns, 0), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"hosts":["elsewhere"]}}`)),
		client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	before = w.total()
	if err := c.Apply(ctx, virtualService(ns, 50)); err != nil {
		t.Fatal(err)
	}
	if got := w.total() - before; got != 1 {
		t.Errorf("re-applying after someone else changed the spec wrote %d times, want 1", got)
	}

	// The object is deleted and made again by someone else, with Picchu's
	// labels: its generation starts over, and it is written over.
	if err := other.Delete(ctx, virtualService(ns, 0)); err != nil {
		t.Fatal(err)
	}
	if err := other.Create(ctx, virtualService(ns, 10)); err != nil {
		t.Fatal(err)
	}
	before = w.total()
	if err := c.Apply(ctx, virtualService(ns, 50)); err != nil {
		t.Fatal(err)
	}
	if got := w.total() - before; got != 1 {
		t.Errorf("re-applying over an object made again wrote %d times, want 1", got)
	}
}

// TestCluster_NeverForcesOntoAnObjectMadeSinceItsOwnershipRead: the cache
// still shows Picchu's ConfigMap, which someone deleted and made again as
// their own (no Picchu label). Applying over it is refused by the API
// server, the object its ownership read saw being gone: theirs keeps its
// data and labels, and once the cache shows theirs, Picchu names it as not
// its own.
func TestCluster_NeverForcesOntoAnObjectMadeSinceItsOwnershipRead(t *testing.T) {
	ctx := context.Background()
	c, lagging, _ := laggingCluster(t)
	ns := namespace(t, []*applier.Cluster{c})
	if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "ours"})); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: ns, Name: "config"}
	lagging.hold(ctx, t, key, &corev1.ConfigMap{})
	lagging.stale(key)

	other := env.Targets[0].Client
	if err := other.Delete(ctx, configMap(ns, nil)); err != nil {
		t.Fatal(err)
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: ns, Labels: map[string]string{"team": "b"}},
		Data: map[string]string{"a": "theirs"}}
	if err := other.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}

	err := c.Apply(ctx, configMap(ns, map[string]string{"a": "ours, again"}))
	if !strings.Contains(fmt.Sprint(err), "deleted and made again") {
		t.Errorf("the error does not say the object was made again: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "config") {
		t.Errorf("applying over an object made since the ownership read: %v; want an error naming it", err)
	}
	got := &corev1.ConfigMap{}
	if err := other.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.UID != theirs.UID || got.Data["a"] != "theirs" || got.Labels[picchuv1alpha1.LabelApp] != "" || got.Labels["team"] != "b" {
		t.Errorf("their ConfigMap is now %v %v; want it untouched", got.Labels, got.Data)
	}

	lagging.catchUp()
	var notOwned *applier.NotOwnedError
	if err := c.Apply(ctx, configMap(ns, map[string]string{"a": "ours, again"})); !errors.As(err, &notOwned) {
		t.Errorf("applying once the cache shows theirs: %v; want a NotOwnedError", err)
	}
}
