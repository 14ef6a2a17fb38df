// Package shards tests the shard coordinator against a real API server:
// replicas split the shards, hand them over when one stops, take them over
// when one dies, and never hold a shard at once.
package shards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/medium/picchu/shard"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{}, func(s *harness.Suite) error {
		env = s.Env
		return nil
	})
}

const (
	shards        = 4
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 250 * time.Millisecond
)

// replica is one coordinator, running until stopped, whose client can be
// cut off as a dead process's would be.
type replica struct {
	name    string
	c       *shard.Coordinator
	dead    atomic.Bool
	cancel  context.CancelFunc
	stopped chan error
}

func start(t *testing.T, set, name string) *replica {
	t.Helper()
	r := &replica{name: name, stopped: make(chan error, 1)}
	cut := func() error {
		if r.dead.Load() {
			return errors.New("the replica is dead")
		}
		return nil
	}
	direct, err := client.NewWithWatch(env.Delivery.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(direct, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			return errors.Join(cut(), c.List(ctx, l, opts...))
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if err := cut(); err != nil {
				return err
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			if err := cut(); err != nil {
				return err
			}
			return c.Update(ctx, o, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if err := cut(); err != nil {
				return err
			}
			return c.Delete(ctx, o, opts...)
		},
	})
	r.c, err = shard.New(shard.Config{
		Client: c, Namespace: env.Namespace, Name: set, Identity: name, Shards: shards,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Log: testr.New(t).WithName(name),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.stopped <- r.c.Start(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the replica as a graceful shutdown does, and returns once it
// has released what it held.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.stopped; err != nil && !r.dead.Load() {
		t.Errorf("%s stopping: %v", r.name, err)
	}
}

// holds lists the shards whose apps r may act on now.
func (r *replica) holds() []int {
	var out []int
	for i := range shards {
		if _, done, ok := r.c.Set().Begin(context.Background(), keyOf(i)); ok {
			done()
			out = append(out, i)
		}
	}
	return out
}

// keys maps each shard to an app key in it.
var keys = func() map[int]string {
	out := map[int]string{}
	for i := 0; len(out) < shards; i++ {
		k := shard.AppKey("apps", fmt.Sprintf("app-%d", i))
		if _, ok := out[shard.Of(k, shards)]; !ok {
			out[shard.Of(k, shards)] = k
		}
	}
	return out
}()

func keyOf(i int) string { return keys[i] }

// holders reads the holder of every shard's Lease.
func holders(ctx context.Context, set string) (map[int]string, error) {
	out := map[int]string{}
	for i := range shards {
		l := &coordinationv1.Lease{}
		err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: fmt.Sprintf("%s-shard-%d", set, i)}, l)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return out, nil
}

// exclusive watches, until the test ends, that no shard is held by two
// replicas at once, as their Sets say.
func exclusive(t *testing.T, replicas ...*replica) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Sampled every 5 ms until the test ends or two replicas overlap.
		_ = wait.PollUntilContextCancel(ctx, 5*time.Millisecond, true, func(context.Context) (bool, error) {
			seen := map[int]string{}
			for _, r := range replicas {
				for _, i := range r.holds() {
					if other, ok := seen[i]; ok {
						t.Errorf("shard %d held by %s and %s at once", i, other, r.name)
						return true, nil
					}
					seen[i] = r.name
				}
			}
			return false, nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func split(a, b *replica) error {
	ha, hb := a.holds(), b.holds()
	if len(ha) != shards/2 || len(hb) != shards/2 {
		return fmt.Errorf("%s holds %v, %s holds %v", a.name, ha, b.name, hb)
	}
	return nil
}

// TestCoordinators_SplitAndHandOverOnStop: two replicas split the shards
// evenly; one stopping gracefully waits for the work under way on its
// shards, releases their Leases at once, and the other takes them well
// before a lease duration.
func TestCoordinators_SplitAndHandOverOnStop(t *testing.T) {
	ctx := context.Background()
	a := start(t, "split", "a")
	b := start(t, "split", "b")
	exclusive(t, a, b)
	kit.Eventually(t, 10*time.Second, "the shards split evenly", func() error { return split(a, b) })
	hs, err := holders(ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if want := map[bool]string{true: "a", false: "b"}[slices.Contains(a.holds(), i)]; h != want {
			t.Errorf("shard %d's lease names %q, the replica acting on it is %q", i, h, want)
		}
	}

	var mu sync.Mutex
	var dropped []int
	a.c.OnDrop(func(s int) {
		mu.Lock()
		defer mu.Unlock()
		dropped = append(dropped, s)
	})
	held := a.holds()

	// Work under way on one of a's shards is told to stop, and holds
	// the shard's release back until it returns.
	busy := a.holds()[0]
	run, done, ok := a.c.Set().Begin(ctx, keyOf(busy))
	if !ok {
		t.Fatalf("a refuses work on shard %d it holds", busy)
	}
	var stopped sync.WaitGroup
	stopped.Go(func() { a.stop(t) })
	kit.Eventually(t, 5*time.Second, "a stops taking work", func() error {
		if h := a.holds(); len(h) > 0 {
			return fmt.Errorf("a still holds %v", h)
		}
		return nil
	})
	kit.Eventually(t, time.Second, "the work under way is told to stop", func() error {
		if run.Err() == nil {
			return fmt.Errorf("the run on shard %d goes on", busy)
		}
		return nil
	})
	if hs, err := holders(ctx, "split"); err != nil || hs[busy] != "a" {
		t.Errorf("shard %d, with work under way, changed hands: %v %v", busy, hs, err)
	}
	releasing := time.Now()
	done()
	stopped.Wait()
	kit.Eventually(t, 2*time.Second, "b holds every shard", func() error {
		if h := b.holds(); len(h) != shards {
			return fmt.Errorf("b holds %v", h)
		}
		return nil
	})
	if took := time.Since(releasing); took >= leaseDuration {
		t.Errorf("b took a's shards %s after a stopped, not before a lease duration (%s)", took, leaseDuration)
	}
	kit.Eventually(t, time.Second, "a's shards dropped, for what it exports of them to go", func() error {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(slices.Sorted(slices.Values(dropped)), held) {
			return fmt.Errorf("dropped %v, held %v", dropped, held)
		}
		return nil
	})
	if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "split-replica-a"}, &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("a's replica lease after it stopped: %v, want NotFound", err)
	}
}

// TestCoordinators_TakeOverFromADeadReplica: a replica that can no longer
// reach the API server stops acting on its shards at its renew deadline;
// the other takes them a lease duration after their last renewal, not
// before, and never while the dead one still acts.
func TestCoordinators_TakeOverFromADeadReplica(t *testing.T) {
	a := start(t, "dead", "a")
	b := start(t, "dead", "b")
	exclusive(t, a, b)
	kit.Eventually(t, 10*time.Second, "the shards split evenly", func() error { return split(a, b) })

	lost := a.holds()
	// A run in progress on one of them, longer than the leases.
	run, done, ok := a.c.Set().Begin(context.Background(), keyOf(lost[0]))
	if !ok {
		t.Fatalf("a refuses work on shard %d it holds", lost[0])
	}
	defer done()
	kit.Eventually(t, 5*time.Second, "a renews its shards", func() error {
		for _, i := range lost {
			l := &coordinationv1.Lease{}
			if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: fmt.Sprintf("dead-shard-%d", i)}, l); err != nil {
				return err
			}
			if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(l.Spec.AcquireTime.Time) {
				return fmt.Errorf("shard %d not renewed since it was acquired", i)
			}
		}
		return nil
	})
	a.dead.Store(true)
	died := time.Now()
	kit.Eventually(t, leaseDuration, "a stops acting, its run in progress too", func() error {
		if h := a.holds(); len(h) > 0 {
			return fmt.Errorf("a still holds %v", h)
		}
		if run.Err() == nil {
			return fmt.Errorf("the run on shard %d goes on", lost[0])
		}
		return nil
	})
	if len(b.holds()) != shards/2 {
		t.Errorf("b holds %v before a's run in progress was told to stop", b.holds())
	}
	// The run's next write is not sent.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: "written-by-a-dead-replica"}}
	if err := env.Delivery.Client.Create(run, cm); !errors.Is(err, context.Canceled) {
		t.Errorf("a write of the run after its shard was lost: %v, want context canceled", err)
	}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); !apierrors.IsNotFound(err) {
		t.Errorf("the run's write after its shard was lost reached the API server: %v", err)
	}
	kit.Eventually(t, 3*leaseDuration, "b takes a's shards", func() error {
		if h := b.holds(); len(h) != shards {
			return fmt.Errorf("b holds %v", h)
		}
		return nil
	})
	// a renewed at most a retry period before it died.
	if took := time.Since(died); took < leaseDuration-retryPeriod {
		t.Errorf("b took a's shards %v %s after a died, before their leases ran out (%s)", lost, took, leaseDuration)
	}
	hs, err := holders(context.Background(), "dead")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range lost {
		if hs[i] != "b" {
			t.Errorf("shard %d's lease names %q, want b", i, hs[i])
		}
	}
}
