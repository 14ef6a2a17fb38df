package shard

import (
	"context"
	"sync"
	"time"
)

// Set is the shards this replica may act on, each until a deadline (its
// last renewal plus the renew deadline, which is shorter than the lease
// duration others wait before they take it over), and the work under way
// in each. A nil *Set holds every app: one replica, not sharded.
type Set struct {
	n   int
	now func() time.Time

	mu       sync.Mutex
	idle     *sync.Cond
	until    map[int]time.Time
	inflight map[int]int
}

// NewSet returns a Set of n shards, none held; now is the clock (time.Now
// when nil).
func NewSet(n int, now func() time.Time) *Set {
	if now == nil {
		now = time.Now
	}
	s := &Set{n: n, now: now, until: map[int]time.Time{}, inflight: map[int]int{}}
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
// when this replica does not hold its shard (or its hold has run out);
// otherwise done must be called when the work ends. A shard is released
// only once the work begun on it is done.
func (s *Set) Begin(key string) (done func(), ok bool) {
	if s == nil {
		return func() {}, true
	}
	shard := Of(key, s.n)
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, held := s.until[shard]; !held || !s.now().Before(until) {
		return nil, false
	}
	s.inflight[shard]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.inflight[shard]--
			s.idle.Broadcast()
		})
	}, true
}

// hold lets work begin on shard until the deadline.
func (s *Set) hold(shard int, until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until[shard] = until
}

// held lists the shards held now, in order.
func (s *Set) held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for i := range s.n {
		if until, ok := s.until[i]; ok && s.now().Before(until) {
			out = append(out, i)
		}
	}
	return out
}

// stop stops new work on shard at once.
func (s *Set) stop(shard int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.until, shard)
}

// drop stops new work on shard at once and waits, until ctx ends, for the
// work under way on it; it says whether that work is done.
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
