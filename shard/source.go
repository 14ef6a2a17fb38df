package shard

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Lister lists the requests of a controller whose objects are in shard.
type Lister func(ctx context.Context, shard int) []reconcile.Request

// subscriber is a controller's queue and how to list its objects.
type subscriber struct {
	ctx   context.Context
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	list  Lister
}

// Source is a controller-runtime source that queues, whenever this
// replica takes a shard, every object list returns for it: work refused
// while another replica held the shard is done now. The shards held when
// the controller starts are queued then.
func (c *Coordinator) Source(name string, list Lister) source.Source {
	return &acquired{c: c, name: name, list: list}
}

type acquired struct {
	c    *Coordinator
	name string
	list Lister
}

func (a *acquired) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s := &subscriber{ctx: ctx, queue: q, list: a.list}
	a.c.mu.Lock()
	a.c.subs = append(a.c.subs, s)
	a.c.mu.Unlock()
	for _, i := range a.c.set.held() {
		go s.enqueue(i)
	}
	return nil
}

func (a *acquired) String() string { return "shards acquired (" + a.name + ")" }

// OnDrop has fn called, in a goroutine of its own, whenever this replica
// stops acting on a shard (given back, lost, or on the way out): what it
// exports about the shard's apps is another replica's to export now.
func (c *Coordinator) OnDrop(fn func(shard int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onDrop = append(c.onDrop, fn)
}

// dropped calls the OnDrop functions for shard i.
func (c *Coordinator) dropped(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.onDrop {
		go fn(i)
	}
}

// notify queues the objects of shard i in every subscribed controller.
func (c *Coordinator) notify(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.subs {
		go s.enqueue(i)
	}
}

func (s *subscriber) enqueue(i int) {
	for _, r := range s.list(s.ctx, i) {
		s.queue.Add(r)
	}
}

// SourceOf is Source with a Lister of the objects r lists with newList
// whose key (as key gives it) is in the shard.
func (c *Coordinator) SourceOf(name string, r client.Reader, newList func() client.ObjectList, key func(client.Object) string) source.Source {
	return c.Source(name, objectsIn(r, newList, key, c.cfg.Shards))
}

// objectsIn is a Lister of the objects a reader lists with newList whose
// key (as key gives it) is in the shard, among n shards.
func objectsIn(r client.Reader, newList func() client.ObjectList, key func(client.Object) string, n int) Lister {
	return func(ctx context.Context, shard int) []reconcile.Request {
		list := newList()
		if err := r.List(ctx, list); err != nil {
			logf.FromContext(ctx).Error(err, "listing the objects of an acquired shard", "shard", shard)
			return nil
		}
		var out []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok && Of(key(obj), n) == shard {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return out
	}
}
