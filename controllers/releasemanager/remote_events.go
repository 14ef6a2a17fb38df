package releasemanager

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// RemoteEvents carries changes seen in remote clusters' caches to the
// ReleaseManager controller's queue. It is a controller-runtime source:
// Notify never blocks and never drops; requests notified before the
// controller starts are queued when it does, and the queue merges
// repeated requests for the same ReleaseManager.
type RemoteEvents struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[types.NamespacedName]struct{}
}

var _ source.Source = &RemoteEvents{}

// NewRemoteEvents returns a source with nothing pending.
func NewRemoteEvents() *RemoteEvents {
	return &RemoteEvents{pending: map[types.NamespacedName]struct{}{}}
}

// Notify asks for the ReleaseManager rm to be reconciled.
func (e *RemoteEvents) Notify(rm types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.queue == nil {
		e.pending[rm] = struct{}{}
		return
	}
	e.queue.Add(reconcile.Request{NamespacedName: rm})
}

// Start hands the source the controller's queue.
func (e *RemoteEvents) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = q
	for rm := range e.pending {
		q.Add(reconcile.Request{NamespacedName: rm})
	}
	clear(e.pending)
	return nil
}

// String names the source in controller-runtime's logs.
func (e *RemoteEvents) String() string { return "remote ReplicaSets" }
