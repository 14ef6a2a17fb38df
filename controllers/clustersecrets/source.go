package clustersecrets

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// remoteChanges carries changes to copies on target clusters to the
// controller's queue. It is a controller-runtime source: Notify never
// blocks and never drops; what is notified before the controller starts is
// queued when it does.
type remoteChanges struct {
	mu      sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]
	pending map[types.NamespacedName]struct{}
}

var _ source.Source = &remoteChanges{}

func newRemoteChanges() *remoteChanges {
	return &remoteChanges{pending: map[types.NamespacedName]struct{}{}}
}

// Notify asks for a run of the ClusterSecrets owner.
func (e *remoteChanges) Notify(owner types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.queue == nil {
		e.pending[owner] = struct{}{}
		return
	}
	e.queue.Add(reconcile.Request{NamespacedName: owner})
}

// Start hands the source the controller's queue.
func (e *remoteChanges) Start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = q
	for owner := range e.pending {
		q.Add(reconcile.Request{NamespacedName: owner})
	}
	clear(e.pending)
	return nil
}

// String names the source in controller-runtime's logs.
func (e *remoteChanges) String() string { return "copies on target clusters" }
