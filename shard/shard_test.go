package shard

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/medium/picchu/test/kit"
)

func TestOf_IsStableAndSpreads(t *testing.T) {
	// Fixed values: a change of hash would move every app to another
	// replica during an upgrade.
	for key, want := range map[string]int{"picchu/demo": 1, "picchu/api": 0, "cluster:picchu/east": 1} {
		if got := Of(key, 2); got != want {
			t.Errorf("Of(%q, 2) = %d, want %d", key, got, want)
		}
	}
	if Of("anything", 1) != 0 || Of("anything", 0) != 0 {
		t.Error("one shard or none: everything is in shard 0")
	}
	counts := make([]int, 4)
	for i := range 1000 {
		counts[Of(AppKey("ns", fmt.Sprintf("app-%d", i)), 4)]++
	}
	for s, n := range counts {
		if n < 200 || n > 300 {
			t.Errorf("shard %d has %d of 1000 apps, want about 250: %v", s, n, counts)
		}
	}
}

func TestFairShare(t *testing.T) {
	for _, c := range []struct{ n, live, want int }{
		{4, 1, 4}, {4, 2, 2}, {4, 3, 2}, {4, 4, 1}, {4, 5, 1}, {3, 2, 2}, {2, 0, 2},
	} {
		if got := FairShare(c.n, c.live); got != c.want {
			t.Errorf("FairShare(%d, %d) = %d, want %d", c.n, c.live, got, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name string
		view View
		want Plan
	}{
		{"alone: takes every free shard", View{Me: "a", Shards: 4, Live: 1, Free: []int{0, 1, 2, 3}},
			Plan{Acquire: []int{0, 1, 2, 3}}},
		{"alone and holding them all: nothing", View{Me: "a", Shards: 4, Live: 1, Held: []int{0, 1, 2, 3}}, Plan{}},
		{"a second replica came: gives half back", View{Me: "a", Shards: 4, Live: 2, Held: []int{0, 1, 2, 3}},
			Plan{Release: byPreference("a", []int{0, 1, 2, 3})[2:]}},
		{"below its share: takes what is free", View{Me: "b", Shards: 4, Live: 2, Held: []int{}, Free: []int{1, 3}},
			Plan{Acquire: []int{1, 3}}},
		{"below its share, nothing free: waits", View{Me: "b", Shards: 4, Live: 2}, Plan{}},
		{"takes no more than its share", View{Me: "b", Shards: 4, Live: 2, Held: []int{0}, Free: []int{1, 2, 3}},
			Plan{Acquire: byPreference("b", []int{1, 2, 3})[:1]}},
		{"at its share: nothing, even with shards free", View{Me: "a", Shards: 4, Live: 2, Held: []int{0, 2}, Free: []int{1}}, Plan{}},
		{"a replica with another shard count is alive: takes nothing", View{Me: "a", Shards: 4, Live: 2, Free: []int{0, 1}, Mixed: true}, Plan{}},
		{"mixed but above its share: still gives back", View{Me: "a", Shards: 2, Live: 2, Held: []int{0, 1}, Mixed: true},
			Plan{Release: byPreference("a", []int{0, 1})[1:]}},
		{"more replicas than shards: one each at most", View{Me: "c", Shards: 2, Live: 3, Held: []int{0, 1}},
			Plan{Release: byPreference("c", []int{0, 1})[1:]}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(c.view)
			slices.Sort(c.want.Acquire)
			slices.Sort(c.want.Release)
			if !slices.Equal(got.Acquire, c.want.Acquire) || !slices.Equal(got.Release, c.want.Release) {
				t.Errorf("Decide(%+v) = %+v, want %+v", c.view, got, c.want)
			}
		})
	}
}

// TestDecide_ReplicasConverge plays replicas deciding one after the other
// from what they see, with leases taken first come first served: whatever
// the number of replicas and shards, every shard ends held by exactly one
// replica, each within its fair share, and no replica holds a shard
// another holds at any moment.
func TestDecide_ReplicasConverge(t *testing.T) {
	for shards := 2; shards <= 8; shards++ {
		for replicas := 1; replicas <= 5; replicas++ {
			holder := make([]string, shards)
			ids := make([]string, replicas)
			for i := range ids {
				ids[i] = fmt.Sprintf("replica-%d", i)
			}
			for round := range 10 {
				for _, me := range ids {
					v := View{Me: me, Shards: shards, Live: replicas}
					for s, h := range holder {
						switch h {
						case me:
							v.Held = append(v.Held, s)
						case "":
							v.Free = append(v.Free, s)
						}
					}
					p := Decide(v)
					for _, s := range p.Release {
						holder[s] = ""
					}
					for _, s := range p.Acquire {
						if holder[s] != "" {
							t.Fatalf("%d shards, %d replicas, round %d: %s takes shard %d held by %s", shards, replicas, round, me, s, holder[s])
						}
						holder[s] = me
					}
				}
			}
			held := map[string]int{}
			for s, h := range holder {
				if h == "" {
					t.Errorf("%d shards, %d replicas: shard %d is held by nobody", shards, replicas, s)
				}
				held[h]++
			}
			for id, n := range held {
				if n > FairShare(shards, replicas) {
					t.Errorf("%d shards, %d replicas: %s holds %d, above its share", shards, replicas, id, n)
				}
			}
		}
	}
}

func TestSet_BeginOnlyOnHeldShardsUntilTheirDeadline(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	s := NewSet(2, clk)
	key := AppKey("picchu", "demo") // shard 1
	if _, _, ok := s.Begin(context.Background(), key); ok {
		t.Fatal("began work on a shard not held")
	}
	s.hold(Of(key, 2), clk.Now().Add(10*time.Second))
	_, done, ok := s.Begin(context.Background(), key)
	if !ok || !holds(s, key) {
		t.Fatal("refused work on a held shard")
	}
	done()
	done() // twice is once
	if s.inflight[1] != 0 {
		t.Errorf("work under way after done: %d", s.inflight[1])
	}
	clk.Step(10 * time.Second)
	if _, _, ok := s.Begin(context.Background(), key); ok {
		t.Error("began work on a shard whose hold ran out")
	}
	var nilSet *Set
	ctx := context.WithValue(context.Background(), struct{}{}, "run")
	if run, done, ok := nilSet.Begin(ctx, key); !ok || done == nil || run != ctx || !holds(nilSet, key) || nilSet.Shards() != 1 {
		t.Error("a nil Set must hold every app, and run work with the context it is given")
	}
}

// TestSet_ARunEndsWithItsShard checks that the context of a run in
// progress ends when this replica stops holding its shard: lost, given
// back, or not renewed by its deadline; and only then, however long the
// run lasts while the hold is renewed.
func TestSet_ARunEndsWithItsShard(t *testing.T) {
	key := AppKey("picchu", "demo")
	shard := Of(key, 2)
	other := AppKey("picchu", "other") // shard 0
	if Of(other, 2) == shard {
		t.Fatal("the keys must be in two shards")
	}
	for _, tc := range []struct {
		name string
		end  func(s *Set, clk *clocktesting.FakeClock)
	}{
		{"lost", func(s *Set, _ *clocktesting.FakeClock) { s.stop(shard) }},
		{"given back", func(s *Set, _ *clocktesting.FakeClock) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the run under way keeps the drop from waiting
			s.drop(ctx, shard)
		}},
		{"not renewed", func(_ *Set, clk *clocktesting.FakeClock) { clk.Step(10 * time.Second) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			s := NewSet(2, clk)
			s.hold(shard, clk.Now().Add(10*time.Second))
			s.hold(Of(other, 2), clk.Now().Add(time.Hour))
			parent, cancel := context.WithCancel(context.Background())
			defer cancel()
			run, done, ok := s.Begin(parent, key)
			if !ok {
				t.Fatal("refused work on a held shard")
			}
			defer done()
			otherRun, otherDone, ok := s.Begin(parent, other)
			if !ok {
				t.Fatal("refused work on a held shard")
			}
			defer otherDone()
			// A run of two minutes, its shard renewed every 2 s against
			// a renew deadline of 10 s: it goes on.
			for range 60 {
				clk.Step(2 * time.Second)
				s.hold(shard, clk.Now().Add(10*time.Second))
				s.hold(Of(other, 2), clk.Now().Add(time.Hour))
			}
			if run.Err() != nil {
				t.Fatalf("the run ended while its shard was renewed in time: %v", run.Err())
			}
			tc.end(s, clk)
			select {
			case <-run.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the run goes on after its shard was " + tc.name)
			}
			if otherRun.Err() != nil {
				t.Errorf("a run on another shard ended with it: %v", otherRun.Err())
			}
			if _, _, ok := s.Begin(parent, key); ok {
				t.Error("began work on a shard " + tc.name)
			}
		})
	}
}

func TestSet_DropWaitsForWorkUnderWay(t *testing.T) {
	s := NewSet(2, nil)
	key := AppKey("picchu", "demo")
	s.hold(Of(key, 2), time.Now().Add(time.Hour))
	run, done, ok := s.Begin(context.Background(), key)
	if !ok {
		t.Fatal("refused work on a held shard")
	}
	dropped := make(chan bool)
	go func() { dropped <- s.drop(context.Background(), Of(key, 2)) }()
	// New work is refused as soon as the drop starts, and the work under
	// way is told to stop, while it runs.
	kit.Eventually(t, time.Second, "new work refused", func() error {
		if holds(s, key) {
			return fmt.Errorf("%s still taken", key)
		}
		return nil
	})
	if _, _, ok := s.Begin(context.Background(), key); ok {
		t.Error("began work on a shard being dropped")
	}
	select {
	case <-run.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the work under way on a shard being dropped was not told to stop")
	}
	select {
	case <-dropped:
		t.Fatal("drop returned while work was under way")
	default:
	}
	done()
	if !<-dropped {
		t.Error("drop says work is still under way after it ended")
	}

	// A drop whose context ends first says the work is not done.
	s.hold(Of(key, 2), time.Now().Add(time.Hour))
	if _, _, ok := s.Begin(context.Background(), key); !ok {
		t.Fatal("refused work on a held shard")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if s.drop(ctx, Of(key, 2)) {
		t.Error("drop says work is done while it is under way")
	}
}

// holds says whether s lets work on key begin now.
func holds(s *Set, key string) bool {
	_, done, ok := s.Begin(context.Background(), key)
	if ok {
		done()
	}
	return ok
}

func TestLabelSafe(t *testing.T) {
	for in, want := range map[string]string{
		"Pod_Name.1":         "pod-name-1",
		"-edge-":             "edge",
		"a-very-long-name-x": "long-name-x",
	} {
		if got := labelSafe(in, 11); got != want {
			t.Errorf("labelSafe(%q, 11) = %q, want %q", in, got, want)
		}
	}
}
