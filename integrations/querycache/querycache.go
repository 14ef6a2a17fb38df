// Package querycache is the cache of alert queries the Prometheus and
// Datadog clients share: each query's answer is kept for a TTL, at most
// Size answers are kept, and the callers that miss the cache together share
// one fetch. The fetch runs apart from the first caller's cancellation, so
// that one caller giving up does not fail the others; each caller still
// returns as soon as its own context is done. A caller may ask, through its
// context (NotBefore), for no answer fetched before a time.
package querycache

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"golang.org/x/sync/singleflight"
)

// Cache holds the answers of queries, of type V. It is safe for concurrent
// use. Its expiry runs a goroutine that lives as long as the process:
// create one per client and keep it.
type Cache[V any] struct {
	lru   *expirable.LRU[string, entry[V]]
	group singleflight.Group
	// wrap describes a caller's context error for query.
	wrap func(query string, err error) error
	// waiting counts the callers waiting on a fetch; joined, when set, is
	// called once a caller that missed the cache has joined the fetch
	// (both for tests).
	waiting atomic.Int64
	joined  func(query string)
}

// entry is an answer and when the fetch that got it began: the answer is
// no older than that.
type entry[V any] struct {
	v  V
	at time.Time
}

type notBeforeKey struct{}

// NotBefore returns ctx asking the caches it reaches for no answer
// fetched before t: what judges a build whose judgment began at t (its
// canary, a retry) must have been asked since, not kept from before.
func NotBefore(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, notBeforeKey{}, t)
}

// notBefore is the time ctx asks answers to be fetched after (NotBefore);
// zero when it asks nothing.
func notBefore(ctx context.Context) time.Time {
	t, _ := ctx.Value(notBeforeKey{}).(time.Time)
	return t
}

// New returns a cache of at most size answers, each kept for ttl. wrap
// describes the error of a caller whose context ended before its answer
// came (the fetch's own errors are returned as they are).
func New[V any](size int, ttl time.Duration, wrap func(query string, err error) error) *Cache[V] {
	return &Cache[V]{lru: expirable.NewLRU[string, entry[V]](size, nil, ttl), wrap: wrap}
}

// Get returns query's answer: from the cache, or else from fetch, called
// once for all the callers that miss the cache together, with a context
// that ctx's cancellation does not reach (fetch sets its own deadline). A
// successful answer is cached; an error is not. An answer fetched before
// the time ctx asks for (NotBefore) is not returned: it is fetched again.
func (c *Cache[V]) Get(ctx context.Context, query string, fetch func(context.Context) (V, error)) (V, error) {
	var zero V
	since := notBefore(ctx)
	if e, ok := c.lru.Get(query); ok && !e.at.Before(since) {
		return e.v, nil
	}
	if err := context.Cause(ctx); err != nil {
		return zero, c.wrap(query, err)
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	flightCtx := context.WithoutCancel(ctx)
	// A flight that began before since does not answer this caller: it
	// waits for it to end, then flies again (at most once more).
	for range 2 {
		results := c.group.DoChan(query, func() (any, error) {
			// A flight that ended just before this one began has cached its answer.
			if e, ok := c.lru.Get(query); ok && !e.at.Before(since) {
				return e, nil
			}
			e := entry[V]{at: time.Now()}
			v, err := fetch(flightCtx)
			if err != nil {
				return nil, err
			}
			e.v = v
			c.lru.Add(query, e)
			return e, nil
		})
		if c.joined != nil {
			c.joined(query)
		}
		select {
		case r := <-results:
			if r.Err != nil {
				return zero, r.Err
			}
			if e, _ := r.Val.(entry[V]); !e.at.Before(since) {
				return e.v, nil
			}
		case <-ctx.Done():
			return zero, c.wrap(query, context.Cause(ctx))
		}
	}
	return zero, fmt.Errorf("%s: no answer fetched since %s", query, since.Format(time.RFC3339Nano))
}

// Len is the number of answers cached now, never more than the size
// (expired ones count until swept).
func (c *Cache[V]) Len() int { return c.lru.Len() }

// Waiting is the number of callers waiting on a fetch now.
func (c *Cache[V]) Waiting() int64 { return c.waiting.Load() }

// OnJoined sets f to be called with the query once a caller that missed
// the cache has joined the query's fetch, so that tests can tell when
// concurrent callers share one. Set it before the first Get.
func (c *Cache[V]) OnJoined(f func(query string)) { c.joined = f }
