package nodes

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/medium/picchu/images/platform"
)

// Platforms keeps a Node cache per target cluster, built on the registry's
// client of the cluster (its transport, rate limit and circuit breaker),
// started on first use and dropped with Forget. When the platforms of a
// cluster's ready nodes change, changed is called with the cluster's key.
type Platforms struct {
	log     logr.Logger
	changed func(cluster types.NamespacedName)

	mu       sync.Mutex
	clusters map[types.NamespacedName]*nodeCache
	building map[types.NamespacedName]*build
}

type build struct {
	remote cluster.Cluster
	done   chan struct{}
	cache  *nodeCache
	err    error
}

type nodeCache struct {
	remote cluster.Cluster
	cache  cache.Cache
	stop   context.CancelFunc

	mu sync.Mutex
	// read says Of has read the platforms, last.
	read bool
	last []platform.Platform
}

// New is a Platforms with no cache; changed may be nil.
func New(log logr.Logger, changed func(types.NamespacedName)) *Platforms {
	return &Platforms{
		log: log, changed: changed,
		clusters: map[types.NamespacedName]*nodeCache{},
		building: map[types.NamespacedName]*build{},
	}
}

// Of is the platforms of the ready, schedulable nodes of the cluster key
// (platform.OfNodes), read from its cache on remote, the registry's
// current cluster. The first call builds and starts the cache, and waits,
// within ctx, for it to have listed the nodes once.
func (p *Platforms) Of(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) ([]platform.Platform, error) {
	nc, err := p.get(ctx, key, remote)
	if err != nil {
		return nil, err
	}
	if !nc.cache.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("cluster %s: the nodes are not listed yet: %w", key, ctx.Err())
	}
	list := &corev1.NodeList{}
	if err := nc.cache.List(ctx, list); err != nil {
		return nil, fmt.Errorf("cluster %s: listing nodes: %w", key, err)
	}
	ps := platform.OfNodes(list.Items)
	nc.mu.Lock()
	nc.read, nc.last = true, ps
	nc.mu.Unlock()
	return ps, nil
}

func (p *Platforms) get(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) (*nodeCache, error) {
	p.mu.Lock()
	if nc, ok := p.clusters[key]; ok && nc.remote == remote {
		p.mu.Unlock()
		return nc, nil
	}
	b, ok := p.building[key]
	if !ok || b.remote != remote {
		b = &build{remote: remote, done: make(chan struct{})}
		p.building[key] = b
		go p.build(key, b)
	}
	p.mu.Unlock()
	select {
	case <-b.done:
		return b.cache, b.err
	case <-ctx.Done():
		return nil, fmt.Errorf("cluster %s: the node cache is not built yet: %w", key, ctx.Err())
	}
}

func (p *Platforms) build(key types.NamespacedName, b *build) {
	nc, err := p.start(key, b.remote)
	p.mu.Lock()
	defer p.mu.Unlock()
	b.cache, b.err = nc, err
	close(b.done)
	if p.building[key] != b {
		if nc != nil {
			nc.stop()
		}
		return
	}
	delete(p.building, key)
	if err != nil {
		return
	}
	if old, ok := p.clusters[key]; ok {
		old.stop()
	}
	p.clusters[key] = nc
}

// Forget stops and drops the cache of the cluster key: the registry
// stopped or replaced its cluster.
func (p *Platforms) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.building, key)
	if nc, ok := p.clusters[key]; ok {
		nc.stop()
		delete(p.clusters, key)
	}
}

// Stop stops every cache.
func (p *Platforms) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, nc := range p.clusters {
		nc.stop()
		delete(p.clusters, key)
	}
	clear(p.building)
}

func (p *Platforms) start(key types.NamespacedName, remote cluster.Cluster) (*nodeCache, error) {
	log := p.log.WithValues("cluster", key.String())
	nc := &nodeCache{remote: remote}
	ca, err := cache.New(remote.GetConfig(), cache.Options{
		HTTPClient: remote.GetHTTPClient(),
		Scheme:     remote.GetScheme(),
		Mapper:     remote.GetRESTMapper(),
		ByObject:   map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: Reduce}},
		// Only the nodes' informer: a read of anything else is a bug.
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: creating the node cache: %w", key, err)
	}
	ctx, stop := context.WithCancel(context.Background())
	informer, err := ca.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false))
	if err != nil {
		stop()
		return nil, fmt.Errorf("cluster %s: watching nodes: %w", key, err)
	}
	if p.changed != nil {
		send := func(any) { p.check(key, nc) }
		if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: send, UpdateFunc: func(_, obj any) { send(obj) }, DeleteFunc: send,
		}); err != nil {
			stop()
			return nil, fmt.Errorf("cluster %s: watching nodes: %w", key, err)
		}
	}
	nc.cache, nc.stop = ca, stop
	go func() {
		if err := ca.Start(ctx); err != nil {
			log.Error(err, "the node cache stopped")
		}
	}()
	return nc, nil
}

// check calls changed when the platforms of the cluster's ready nodes are
// no longer those Of last read: a node of another architecture became
// ready, say. Heartbeats that change nothing, and the nodes listed before
// anything asked, call nothing.
func (p *Platforms) check(key types.NamespacedName, nc *nodeCache) {
	nc.mu.Lock()
	read := nc.read
	nc.mu.Unlock()
	if !read {
		return
	}
	// Of read the cache once it was synced: listing it does not wait.
	list := &corev1.NodeList{}
	if err := nc.cache.List(context.Background(), list); err != nil {
		return
	}
	ps := platform.OfNodes(list.Items)
	nc.mu.Lock()
	same := slices.Equal(nc.last, ps)
	nc.last = ps
	nc.mu.Unlock()
	if !same {
		p.changed(key)
	}
}

// Reduce is the cache's transform: a Node with only what placement reads,
// so that a large cluster's nodes (their images, addresses, capacity) take
// little memory.
func Reduce(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			Labels: map[string]string{},
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
	}
	for _, k := range []string{platform.LabelOS, platform.LabelArch} {
		if v, ok := n.Labels[k]; ok {
			out.Labels[k] = v
		}
	}
	out.Status.NodeInfo.OperatingSystem = n.Status.NodeInfo.OperatingSystem
	out.Status.NodeInfo.Architecture = n.Status.NodeInfo.Architecture
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}
