package applier_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/test/kit"
)

// askedInformers records the kinds asked of a real cache, and whether an
// asker waited for their lists.
type askedInformers struct {
	cache.Informers
	mu     sync.Mutex
	asked  []schema.GroupVersionKind
	waited bool
}

func (a *askedInformers) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	o := &cache.InformerGetOptions{}
	for _, opt := range opts {
		opt(o)
	}
	a.mu.Lock()
	a.asked = append(a.asked, obj.GetObjectKind().GroupVersionKind())
	a.waited = a.waited || o.BlockUntilSynced == nil || *o.BlockUntilSynced
	a.mu.Unlock()
	return a.Informers.GetInformer(ctx, obj, opts...)
}

func (a *askedInformers) kinds() []schema.GroupVersionKind {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// TestWarm: on a cluster wired as the operator wires it, Warm starts the
// cache's informers of the kinds given, each once, without waiting for
// their lists, which they then list; a kind the cluster does not serve is
// skipped.
func TestWarm(t *testing.T) {
	ctx := context.Background()
	cs, _ := wiredClusters(t)
	c := cs[0]
	asked := &askedInformers{Informers: c.Informers}
	c.Informers = asked
	configMaps := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	secrets := corev1.SchemeGroupVersion.WithKind("Secret")
	unserved := schema.GroupVersionKind{Group: "nothing.example.com", Version: "v1", Kind: "Nothing"}

	c.Warm(ctx, []schema.GroupVersionKind{configMaps, unserved, configMaps})
	c.Warm(ctx, []schema.GroupVersionKind{unserved, configMaps, secrets})
	if got, want := asked.kinds(), []schema.GroupVersionKind{configMaps, unserved, secrets}; !slices.Equal(got, want) {
		t.Fatalf("kinds asked of the cache = %v, want each once: %v", got, want)
	}
	if asked.waited {
		t.Fatal("Warm waited for an informer's list")
	}
	for _, gvk := range []schema.GroupVersionKind{configMaps, secrets} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		informer, err := asked.Informers.GetInformer(ctx, u, cache.BlockUntilSynced(false))
		if err != nil {
			t.Fatal(err)
		}
		if err := kit.Poll(ctx, 10*time.Millisecond, 30*time.Second, gvk.Kind+" listed", func(context.Context) error {
			if !informer.HasSynced() {
				return errors.New("not listed yet")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
