package shard

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Set is the shards this replica may act on, each until a deadline (its
// last renewal plus the renew deadline, which is shorter than the lease
// duration others wait before they take it over), and the work under way
// in each. A nil *Set holds every app: one replica, not sharded.
type Set struct {
	n     int
	clock clock.WithDelayedExecution

	mu       sync.Mutex
	idle     *sync.Cond
	holds    map[int]*hold
	inflight map[int]int
}

// hold is this replica's hold on one shard.
type hold struct {
	until time.Time
	// ctx is done once the hold ends: the shard stopped, dropped, or its
	// deadline passed without a renewal. Every run begun on the shard
	// ends with it.
	ctx    context.Context
	cancel context.CancelFunc
	// expiry ends the hold at its deadline.
	expiry clock.Timer
}

// NewSet returns a Set of n shards, none held; clk is the clock
// (clock.RealClock when nil).
func NewSet(n int, clk clock.WithDelayedExecution) *Set {
	if clk == nil {
		clk = clock.RealClock{}
	}
	s := &Set{n: n, clock: clk, holds: map[int]*hold{}, inflight: map[int]int{}}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// Shards is the number of shards (1 for a nil Set).
func (s *Set) Shards() int {
	if s == nil {
		return 1
	}
	return s.n
}

// Begin asks to work on the object whose shard key is key: ok is false
// when this replica does not hold its shard (or its hold has run out).
// Otherwise the work runs with run, a context of ctx that ends when this
// replica stops holding the shard (lost, given back, or not renewed in
// time), so that no write of the work is sent once another replica may
// hold the shard; and done must be called when the work ends. A shard is
// released only once the work begun on it is done. For a nil Set, run is
// ctx.
func (s *Set) Begin(ctx context.Context, key string) (run context.Context, done func(), ok bool) {
	if s == nil {
		return ctx, func() {}, true
	}
	shard := Of(key, s.n)
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.holds[shard]
	if h == nil || !s.clock.Now().Before(h.until) {
		return ctx, nil, false
	}
	s.inflight[shard]++
	run, cancel := context.WithCancel(ctx)
	unlink := context.AfterFunc(h.ctx, cancel)
	var once sync.Once
	return run, func() {
		once.Do(func() {
			unlink()
			cancel()
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inflight[shard]--
			s.idle.Broadcast()
		})
	}, true
}

// hold lets work begin on shard until the deadline, and ends the work
// under way on it then unless hold is called again before.
func (s *Set) hold(shard int, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait := until.Sub(s.clock.Now())
	if h := s.holds[shard]; h != nil {
		h.until = until
		h.expiry.Reset(wait)
		return
	}
	h := &hold{until: until}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	// In a goroutine of its own, as time.AfterFunc calls it: a fake
	// clock calls it holding its lock.
	h.expiry = s.clock.AfterFunc(wait, func() { go s.expire(shard, h) })
	s.holds[shard] = h
}

// expire ends h, the hold on shard, once its deadline has passed.
func (s *Set) expire(shard int, h *hold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds[shard] != h {
		return // stopped, and maybe held again since
	}
	if left := h.until.Sub(s.clock.Now()); left > 0 {
		// Renewed as the timer fired.
		h.expiry.Reset(left)
		return
	}
	s.end(shard)
}

// end ends the hold on shard and the work under way on it; s.mu is held.
func (s *Set) end(shard int) {
	if h := s.holds[shard]; h != nil {
		h.expiry.Stop()
		h.cancel()
		delete(s.holds, shard)
	}
}

// held lists the shards held now, in order.
func (s *Set) held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i := range s.n {
		if h := s.holds[i]; h != nil && s.clock.Now().Before(h.until) {
			out = append(out, i)
		}
	}
	return out
}

// stop stops work on shard at once: no new work begins, and the work under
// way has its context cancelled.
func (s *Set) stop(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end(shard)
}

// drop stops work on shard at once (see stop) and waits, until ctx ends,
// for the work under way on it to return; it says whether that work is
// done.
func (s *Set) drop(ctx context.Context, shard int) bool {
	s.stop(shard)
	awake := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.idle.Broadcast()
	})
	defer awake()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inflight[shard] > 0 && ctx.Err() == nil {
		s.idle.Wait()
	}
	return s.inflight[shard] == 0
}
