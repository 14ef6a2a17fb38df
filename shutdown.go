package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

const (
	// shutdownGrace is how long the manager waits, once told to stop, for
	// its runnables to end: the controllers' runs (whose contexts it
	// cancels), the shard coordinator giving its Leases back, the caches
	// and the servers. The leader Lease is given back after that, within
	// the leader election's renew deadline (10 s) when the API server
	// hangs, at once when it is gone.
	shutdownGrace = 5 * time.Second
	// exitDeadline is how long after the first SIGTERM or SIGINT the
	// process ends at the latest, whatever the API servers do: the
	// graceful stop above fits in it, and one that does not is cut short.
	// A second signal ends the process at once (ctrl.SetupSignalHandler).
	exitDeadline = 15 * time.Second
)

// exitAfter ends the process with status 1, saying why, deadline after ctx
// is done, unless it has ended by then.
func exitAfter(ctx context.Context, deadline time.Duration) {
	context.AfterFunc(ctx, func() {
		time.AfterFunc(deadline, func() {
			fmt.Fprintf(os.Stderr, "picchu: still stopping %s after the signal to stop; exiting without waiting any longer\n", deadline)
			os.Exit(1)
		})
	})
}

// syncedOrStopping is the manager's cache, whose WaitForCacheSync also
// returns, true, once stopping is done.
//
// Why: the manager waits for its cache to sync before it starts anything
// else, and only then watches its context. When the delivery API server is
// gone the cache never syncs, and controller-runtime's wait
// (runnableGroup.Start, up to v0.25 at least) spins on the done context
// instead of returning: a SIGTERM then burned a core and never reached the
// manager's stop procedure. Once stopping, "synced" only lets the manager
// go on to that stop: the controllers do not start on an unsynced cache
// (each waits for its own sources), and a read blocks until its informer
// syncs or its context ends, which the stop does.
type syncedOrStopping struct {
	cache.Cache
	stopping context.Context
}

// newSyncedOrStopping returns the NewCache of a manager that stops when
// stopping is done.
func newSyncedOrStopping(stopping context.Context) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &syncedOrStopping{Cache: c, stopping: stopping}, nil
	}
}

// WaitForCacheSync waits until the cache has synced, ctx is done (false)
// or the process stops (true).
func (c *syncedOrStopping) WaitForCacheSync(ctx context.Context) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.stopping, cancel)
	defer stop()
	return c.Cache.WaitForCacheSync(ctx) || c.stopping.Err() != nil
}
