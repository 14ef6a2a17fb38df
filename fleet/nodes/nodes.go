package nodes

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/platform"
	"github.com/medium/picchu/decide/preflight"
)

// Cache keeps a Node cache per target cluster, built on the registry's
// client of the cluster (its transport, rate limit and circuit breaker),
// started on first use and dropped with Forget, and, once Capacity is
// asked, a cache of the pods bound to its nodes. When the platforms of a
// cluster's ready nodes change, or the room its nodes offer (a node added,
// removed, cordoned, made ready or resized), changed is called with the
// cluster's key.
type Cache struct {
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
	// read says Platforms or Capacity has read the nodes, last what they
	// showed.
	read bool
	last signature
	// listErr is the last error of a list or watch of the cache, such as
	// a refusal to list pods: a read fails with it at once rather than
	// wait for a sync that will not come.
	listErr error
}

// watchError records the error of a list or watch, and logs it as
// client-go does.
func (nc *nodeCache) watchError(ctx context.Context, r *toolscache.Reflector, err error) {
	toolscache.DefaultWatchErrorHandler(ctx, r, err)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.listErr = fmt.Errorf("%s: %w", r.TypeDescription(), err)
}

// synced waits, within ctx, until hasSynced says so, and fails at once
// when the cache's last list or watch failed.
func (nc *nodeCache) synced(ctx context.Context, hasSynced func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if hasSynced() {
			return nil
		}
		nc.mu.Lock()
		err := nc.listErr
		nc.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// signature is what a change of a cluster's nodes is told for: the
// platforms of its ready nodes, and the room each node offers.
type signature struct {
	platforms []platform.Platform
	room      string
}

func (s signature) equal(o signature) bool {
	return slices.Equal(s.platforms, o.platforms) && s.room == o.room
}

// signatureOf is the signature of nodes.
func signatureOf(nodes []corev1.Node) signature {
	rooms := make([]string, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		alloc := make([]string, 0, len(n.Status.Allocatable))
		for name, q := range n.Status.Allocatable {
			alloc = append(alloc, string(name)+"="+q.String())
		}
		slices.Sort(alloc)
		rooms = append(rooms, fmt.Sprintf("%s ready=%t cordoned=%t taints=%d %s", n.Name, ready, n.Spec.Unschedulable, len(n.Spec.Taints), strings.Join(alloc, ",")))
	}
	slices.Sort(rooms)
	return signature{platforms: platform.OfNodes(nodes), room: strings.Join(rooms, ";")}
}

// New is a Cache of no cluster yet; changed may be nil.
func New(log logr.Logger, changed func(types.NamespacedName)) *Cache {
	return &Cache{
		log: log, changed: changed,
		clusters: map[types.NamespacedName]*nodeCache{},
		building: map[types.NamespacedName]*build{},
	}
}

// Platforms is the platforms of the ready, schedulable nodes of the
// cluster key (platform.OfNodes), read from its cache on remote, the
// registry's current cluster. The first call builds and starts the cache,
// and waits, within ctx, for it to have listed the nodes once.
func (p *Cache) Platforms(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) ([]platform.Platform, error) {
	_, list, err := p.nodes(ctx, key, remote)
	if err != nil {
		return nil, err
	}
	return platform.OfNodes(list), nil
}

// Capacity is what the room of a cluster is counted from: its nodes and
// the pods bound to them that have not ended, reduced (Reduce,
// ReducePod). The first call starts the cluster's pod cache and waits,
// within ctx, for it to have listed the pods once. Its nodes and pods are
// the cache's own, shared and not copied (a cluster of thousands of pods
// is read at every run that checks room): they are read-only.
type Capacity struct {
	Nodes []corev1.Node
	Pods  []corev1.Pod
}

// Capacity reads the nodes and bound pods of the cluster key from its
// caches on remote.
func (p *Cache) Capacity(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) (Capacity, error) {
	nc, nodes, err := p.nodes(ctx, key, remote)
	if err != nil {
		return Capacity{}, err
	}
	informer, err := nc.cache.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil {
		return Capacity{}, fmt.Errorf("cluster %s: watching pods: %w", key, err)
	}
	if err := nc.synced(ctx, informer.HasSynced); err != nil {
		return Capacity{}, fmt.Errorf("cluster %s: the pods are not listed: %w", key, err)
	}
	pods := &corev1.PodList{}
	if err := nc.cache.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return Capacity{}, fmt.Errorf("cluster %s: listing pods: %w", key, err)
	}
	return Capacity{Nodes: nodes, Pods: pods.Items}, nil
}

// nodes lists the cluster's nodes from its cache, recording what they
// showed for check.
func (p *Cache) nodes(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) (*nodeCache, []corev1.Node, error) {
	nc, err := p.get(ctx, key, remote)
	if err != nil {
		return nil, nil, err
	}
	informer, err := nc.cache.GetInformer(ctx, &corev1.Node{}, cache.BlockUntilSynced(false))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster %s: watching nodes: %w", key, err)
	}
	if err := nc.synced(ctx, informer.HasSynced); err != nil {
		return nil, nil, fmt.Errorf("cluster %s: the nodes are not listed: %w", key, err)
	}
	list := &corev1.NodeList{}
	if err := nc.cache.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("cluster %s: listing nodes: %w", key, err)
	}
	sig := signatureOf(list.Items)
	nc.mu.Lock()
	nc.read, nc.last = true, sig
	nc.mu.Unlock()
	return nc, list.Items, nil
}

func (p *Cache) get(ctx context.Context, key types.NamespacedName, remote cluster.Cluster) (*nodeCache, error) {
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

func (p *Cache) build(key types.NamespacedName, b *build) {
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
func (p *Cache) Forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.building, key)
	if nc, ok := p.clusters[key]; ok {
		nc.stop()
		delete(p.clusters, key)
	}
}

// Stop stops every cache.
func (p *Cache) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, nc := range p.clusters {
		nc.stop()
		delete(p.clusters, key)
	}
	clear(p.building)
}

func (p *Cache) start(key types.NamespacedName, remote cluster.Cluster) (*nodeCache, error) {
	log := p.log.WithValues("cluster", key.String())
	nc := &nodeCache{remote: remote}
	ca, err := cache.New(remote.GetConfig(), cache.Options{
		HTTPClient: remote.GetHTTPClient(),
		Scheme:     remote.GetScheme(),
		Mapper:     remote.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Transform: Reduce},
			// Only pods that take room: bound to a node, not ended.
			&corev1.Pod{}: {Field: boundPods, Transform: ReducePod},
		},
		DefaultWatchErrorHandler: nc.watchError,
		// Only the nodes' and pods' informers: a read of anything else is a bug.
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
			AddFunc: send, DeleteFunc: send,
			UpdateFunc: func(old, obj any) {
				if roomOrPlatformMoved(old, obj) {
					send(obj)
				}
			},
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

// check calls changed when the platforms of the cluster's ready nodes, or
// the room its nodes offer, are no longer what was last read: a node of
// another architecture became ready, or a node was added, say. Heartbeats
// that change nothing, and the nodes listed before anything asked, call
// nothing.
func (p *Cache) check(key types.NamespacedName, nc *nodeCache) {
	nc.mu.Lock()
	read := nc.read
	nc.mu.Unlock()
	if !read {
		return
	}
	// Of read the cache once it was synced: listing it does not wait.
	list := &corev1.NodeList{}
	if err := nc.cache.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	sig := signatureOf(list.Items)
	nc.mu.Lock()
	same := nc.last.equal(sig)
	nc.last = sig
	nc.mu.Unlock()
	if !same {
		p.changed(key)
	}
}

// roomOrPlatformMoved says an update of a reduced node changed what the
// node's room or platform are read from: a heartbeat, which changes only
// its resource version once reduced, does not, so a large cluster's
// heartbeats cost no signature.
func roomOrPlatformMoved(old, cur any) bool {
	a, okA := old.(*corev1.Node)
	b, okB := cur.(*corev1.Node)
	if !okA || !okB {
		return true
	}
	return !equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Spec, b.Spec) ||
		!equality.Semantic.DeepEqual(a.Status, b.Status)
}

// boundPods selects the pods bound to a node that have not ended.
var boundPods = fields.AndSelectors(
	fields.OneTermNotEqualSelector("spec.nodeName", ""),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
	fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
)

// Reduce is the node cache's transform: a Node with only what placement
// and room read (labels, taints, schedulability, readiness, allocatable,
// os and architecture), so that a large cluster's nodes (their images,
// addresses, other conditions) take little memory.
func Reduce(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
			Labels: n.Labels,
		},
		Spec: corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints},
	}
	out.Status.Allocatable = n.Status.Allocatable
	out.Status.NodeInfo.OperatingSystem = n.Status.NodeInfo.OperatingSystem
	out.Status.NodeInfo.Architecture = n.Status.NodeInfo.Architecture
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out, nil
}

// ReducePod is the pod cache's transform: a Pod with its Picchu labels,
// node, phase and what it asks of its node (preflight.PodRequests, less
// the pod itself), as the requests of one container.
func ReducePod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	labels := map[string]string{}
	for _, k := range []string{picchuv1alpha1.LabelApp, picchuv1alpha1.LabelTarget, picchuv1alpha1.LabelTag} {
		if v, ok := p.Labels[k]; ok {
			labels[k] = v
		}
	}
	requests := preflight.PodRequests(p)
	delete(requests, corev1.ResourcePods)
	return &corev1.Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Labels: labels,
		},
		Spec: corev1.PodSpec{
			NodeName:   p.Spec.NodeName,
			Containers: []corev1.Container{{Name: "requests", Resources: corev1.ResourceRequirements{Requests: requests}}},
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}
