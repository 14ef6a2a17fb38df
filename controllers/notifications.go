package controllers

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Notifications carry changes a controller's own watches do not see (in
// the caches of target clusters) to its queue. It is a controller-runtime
// source: Notify never blocks and never drops; what is notified before the
// controller starts is queued when it does, and the queue merges repeated
// requests for one object.
type Notifications struct {
	name    string
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[types.NamespacedName]struct{}
}

var _ source.Source = &Notifications{}

// NewNotifications returns a source, named name in controller-runtime's
// logs, with nothing pending.
func NewNotifications(name string) *Notifications {
	return &Notifications{name: name, pending: map[types.NamespacedName]struct{}{}}
}

// Notify asks for a run of the object key.
func (n *Notifications) Notify(key types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queue == nil {
		n.pending[key] = struct{}{}
		return
	}
	n.queue.Add(reconcile.Request{NamespacedName: key})
}

// Start hands the source the controller's queue.
func (n *Notifications) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queue = q
	for key := range n.pending {
		q.Add(reconcile.Request{NamespacedName: key})
	}
	clear(n.pending)
	return nil
}

// String names the source in controller-runtime's logs.
func (n *Notifications) String() string { return n.name }
