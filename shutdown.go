package main

import (
	"context"
	"fmt"
	"os"
	"time"

	clientfeatures "k8s.io/client-go/features"
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

// watchListEnv is the environment variable of client-go's WatchListClient
// feature gate.
const watchListEnv = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)

// withoutWatchList turns client-go's WatchListClient feature off, unless
// $KUBE_FEATURE_WatchListClient sets it. Called first thing, before any
// client reads the gates.
//
// Why: an informer in watch-list mode whose API server refuses connections
// sleeps out its backoff, up to a minute, without watching its context
// (Reflector.watchList, client-go v0.36), so stopping a cache of a cluster
// that has been gone for a while waited that long: past the manager's
// grace period for the delivery cluster. The list-then-watch that informers
// fall back to retries on the same backoff and stops at once.
func withoutWatchList() {
	if _, set := os.LookupEnv(watchListEnv); set {
		return
	}
	clientfeatures.ReplaceFeatureGates(gatesWithout{clientfeatures.FeatureGates(), clientfeatures.WatchListClient})
}

// gatesWithout are client-go's feature gates with one turned off.
type gatesWithout struct {
	clientfeatures.Gates
	off clientfeatures.Feature
}

// Enabled says whether f is on.
func (g gatesWithout) Enabled(f clientfeatures.Feature) bool {
	return f != g.off && g.Gates.Enabled(f)
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
