package clustersecrets

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/medium/picchu/redact"
)

// copies keeps, per target cluster, a cache of the copies every
// ClusterSecrets made there (the Secrets labelled LabelOwner, in every
// namespace), built on the access.Registry's client of the cluster (its
// transport, rate limit and circuit breaker) and dropped with it. The
// registry's own caches hold only objects labelled with an app, so they
// cannot serve these. A change to a copy on any cluster asks for a run of
// the ClusterSecrets that made it.
type copies struct {
	log    logr.Logger
	notify func(owner types.NamespacedName)

	mu       sync.Mutex
	clusters map[types.NamespacedName]*copyCache
	// building are the caches being built, by cluster: building one may
	// ask the cluster which resources it serves, and is done without the
	// lock, so that a cluster that hangs holds up only its own runs.
	building map[types.NamespacedName]*build
}

// build is a cache being built, done when done is closed.
type build struct {
	remote cluster.Cluster
	done   chan struct{}
	cache  *copyCache
	err    error
}

// copyCache is the cache of one cluster's copies.
type copyCache struct {
	// remote is the registry's cluster it was built on.
	remote cluster.Cluster
	cache  cache.Cache
	stop   context.CancelFunc

	mu sync.Mutex
	// lastError says why the copies could not be listed or watched last,
	// as redact.Describe says it.
	lastError string
}

func newCopies(log logr.Logger, notify func(types.NamespacedName)) *copies {
	return &copies{
		log: log, notify: notify,
		clusters: map[types.NamespacedName]*copyCache{},
		building: map[types.NamespacedName]*build{},
	}
}

// get returns the cache of the cluster key for the registry's current
// cluster remote, building and starting it when there is none or it was
// built on another. It waits for a build at most until ctx ends; the
// build goes on, for the next run.
func (c *copies) get(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) (*copyCache, error) {
	c.mu.Lock()
	if cc, ok := c.clusters[key]; ok && cc.remote == remote {
		c.mu.Unlock()
		return cc, nil
	}
	b, ok := c.building[key]
	if !ok || b.remote != remote {
		b = &build{remote: remote, done: make(chan struct{})}
		c.building[key] = b
		go c.build(key, b)
	}
	c.mu.Unlock()
	select {
	case <-b.done:
		return b.cache, b.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the cache of copies on the cluster is not built yet: %w", ctx.Err())
	}
}

// build builds the cache of b, and keeps it unless the cluster was
// forgotten or another build started meanwhile.
func (c *copies) build(key types.NamespacedName, b *build) {
	cc, err := c.start(key, b.remote)
	c.mu.Lock()
	defer c.mu.Unlock()
	b.cache, b.err = cc, err
	close(b.done)
	if c.building[key] != b {
		if cc != nil {
			cc.stop()
		}
		return
	}
	delete(c.building, key)
	if err != nil {
		return
	}
	if old, ok := c.clusters[key]; ok {
		old.stop()
	}
	c.clusters[key] = cc
}

// forget stops and drops the cache of the cluster key, and any being
// built: the registry stopped or replaced its cluster.
func (c *copies) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.building, key)
	if cc, ok := c.clusters[key]; ok {
		cc.stop()
		delete(c.clusters, key)
	}
}

// start builds the cache of the cluster key's copies on remote, and starts
// it in the background: an unreachable cluster never blocks it.
func (c *copies) start(key types.NamespacedName, remote cluster.Cluster) (*copyCache, error) {
	owned, err := labels.NewRequirement(LabelOwner, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("building the selector of copies: %w", err)
	}
	log := c.log.WithValues("cluster", key.String())
	cc := &copyCache{remote: remote}
	ca, err := cache.New(remote.GetConfig(), cache.Options{
		HTTPClient: remote.GetHTTPClient(),
		Scheme:     remote.GetScheme(),
		Mapper:     remote.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.NewSelector().Add(*owned)},
		},
		// Only the copies' informer: a read of anything else is a bug.
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            cache.TransformStripManagedFields(),
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			cc.setError(redact.Describe(err))
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: creating the cache of copies: %w", key, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	informer, err := ca.GetInformer(ctx, &corev1.Secret{}, cache.BlockUntilSynced(false))
	if err != nil {
		stop()
		return nil, fmt.Errorf("cluster %s: watching copies: %w", key, err)
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.send,
		UpdateFunc: func(_, obj any) { c.send(obj) },
		DeleteFunc: c.send,
	}); err != nil {
		stop()
		return nil, fmt.Errorf("cluster %s: watching copies: %w", key, err)
	}
	cc.cache, cc.stop = ca, stop
	go func() {
		if err := ca.Start(ctx); err != nil {
			log.Error(err, "the cache of copies stopped")
		}
	}()
	return cc, nil
}

// send asks for a run of the ClusterSecrets that made the copy obj.
func (c *copies) send(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if owner, ok := parseOwner(s.Annotations[AnnotationOwner]); ok {
		c.notify(owner)
	}
}

// parseOwner reads an AnnotationOwner value, "<namespace>/<name>".
func parseOwner(v string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(v, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

// list returns the cluster's copies, waiting, within ctx, for the cache to
// have listed them once.
func (cc *copyCache) list(ctx context.Context) ([]corev1.Secret, error) {
	if !cc.cache.WaitForCacheSync(ctx) {
		why := cc.error()
		if why == "" {
			why = "no answer yet"
		}
		return nil, fmt.Errorf("the copies on the cluster are not listed yet: %s", why)
	}
	list := &corev1.SecretList{}
	if err := cc.cache.List(ctx, list); err != nil {
		return nil, redact.Wrap(err, "listing the copies")
	}
	cc.setError("")
	return list.Items, nil
}

func (cc *copyCache) setError(msg string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.lastError = msg
}

func (cc *copyCache) error() string {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.lastError
}
