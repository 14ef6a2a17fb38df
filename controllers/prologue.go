package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/shard"
)

// Prologue is how a reconciler's runs begin, the same for every
// reconciler that acts only on the objects of the shards its replica
// holds: read the object from the cache, forget it when it is gone, and
// hold its shard for the run.
type Prologue struct {
	// What the object is, for the error of a failed read ("mirror").
	What string
	// ShardKey is the key of the shard an object belongs to.
	ShardKey func(client.Object) string
	// Gone is told of an object that no longer exists (nil: nothing to
	// forget).
	Gone func(types.NamespacedName)
}

// Run is a run begun on an object: its writes go with Ctx, which ends
// once this replica no longer holds the object's shard. Done must be
// called when the run ends.
type Run struct {
	Ctx  context.Context
	Done func()
}

// Begin reads the object req names into obj and begins a run on it. It
// returns nil, and no error, when there is nothing to do: the object is
// gone (Gone is told) or another replica holds its shard.
func (p Prologue) Begin(ctx context.Context, c client.Reader, shards *shard.Coordinator, req ctrl.Request, obj client.Object) (*Run, error) {
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading %s %s: %w", p.What, req.NamespacedName, err)
		}
		if p.Gone != nil {
			p.Gone(req.NamespacedName)
		}
		return nil, nil
	}
	run, done, ok := shards.Set().Begin(ctx, p.ShardKey(obj))
	if !ok {
		return nil, nil // another replica acts on it
	}
	return &Run{Ctx: run, Done: done}, nil
}
