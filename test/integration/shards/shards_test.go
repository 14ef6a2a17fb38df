// Package shards tests the shard coordinator against a real API server:
// replicas split the shards, hand them over when one stops, take them over
// when one dies, and never hold a shard at once.
package shards

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/shard"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{}, harness.KeepEnv(&env))
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

// hungServer is an API server that accepts every request and answers none
// until the test ends: its /version requests (the health checks) are
// counted, and each says on ended when its client gives up.
type hungServer struct {
	*httptest.Server
	mu       sync.Mutex
	versions int
	ended    chan struct{}
	stop     chan struct{}
}

func startHungServer(t *testing.T) *hungServer {
	t.Helper()
	h := &hungServer{ended: make(chan struct{}, 100), stop: make(chan struct{})}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		version := req.URL.Path == "/version"
		if version {
			h.mu.Lock()
			h.versions++
			h.mu.Unlock()
		}
		select {
		case <-req.Context().Done():
		case <-h.stop:
			return
		}
		if version {
			h.ended <- struct{}{}
		}
	}))
	h.StartTLS()
	t.Cleanup(func() {
		close(h.stop)
		h.Close()
	})
	return h
}

func (h *hungServer) versionChecks() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.versions
}

// TestOperator_ARunSendsNoWriteAfterItsShardIsLost runs the operator, as
// operator.Setup assembles it, with one replica holding both shards and a
// Cluster whose API server never answers. While the Cluster controller's
// run waits on the cluster's health check, another holder takes the
// Cluster's shard Lease: the replica loses the shard, and when the check
// times out the run's status write is not sent, nor any after it.
func TestOperator_ARunSendsNoWriteAfterItsShardIsLost(t *testing.T) {
	ctx := context.Background()
	const set = "writes"
	direct, err := client.New(env.Delivery.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	coordinator, err := shard.New(shard.Config{
		Client: direct, Namespace: env.Namespace, Name: set, Identity: "a", Shards: 2,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Log: testr.New(t).WithName("a"),
	})
	if err != nil {
		t.Fatal(err)
	}
	const healthTimeout = 5 * time.Second
	o, err := inprocess.Start(env, operator.Options{Shards: coordinator, ClusterHealthTimeout: healthTimeout, ClusterHealthPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Stop(); err != nil {
			t.Error(err)
		}
	})
	kit.Eventually(t, 10*time.Second, "the replica holds both shards", func() error {
		for i := range 2 {
			if _, done, ok := coordinator.Set().Begin(ctx, keys2[i]); ok {
				done()
				continue
			}
			return fmt.Errorf("shard %d not held", i)
		}
		return nil
	})

	hung := startHungServer(t)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hung.Certificate().Raw})
	cl, err := kit.RegisterTarget(ctx, env.Delivery.Client, kit.Registration{
		Namespace: env.Namespace, Name: "hung", Fleet: "production",
		Server: hung.URL, CAData: ca, User: &clientcmdapi.AuthInfo{Token: "t"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Registry.Remove(client.ObjectKeyFromObject(cl)) })
	clusterShard := shard.Of(shard.ClusterKey(cl.Namespace, cl.Name), 2)
	kit.Eventually(t, 30*time.Second, "the Cluster controller checks the cluster's health", func() error {
		if hung.versionChecks() == 0 {
			return errors.New("no check yet")
		}
		return nil
	})

	// Another holder takes the shard, for an hour.
	// The replica renews its lease meanwhile: read again on a conflict.
	leaseKey := client.ObjectKey{Namespace: env.Namespace, Name: fmt.Sprintf("%s-shard-%d", set, clusterShard)}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := env.Delivery.Client.Get(ctx, leaseKey, lease); err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		lease.Spec.HolderIdentity, lease.Spec.RenewTime, lease.Spec.LeaseDurationSeconds = ptr.To("b"), &now, ptr.To[int32](3600)
		return env.Delivery.Client.Update(ctx, lease)
	}); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, healthTimeout/2, "the replica loses the shard while the check waits", func() error {
		if _, done, ok := coordinator.Set().Begin(ctx, keys2[clusterShard]); ok {
			done()
			return errors.New("still held")
		}
		return nil
	})
	select {
	case <-hung.ended:
		t.Fatal("the health check ended before the shard was lost: the test proves nothing")
	default:
	}
	// The run goes on to its write once the check times out; the next run
	// checks again.
	select {
	case <-hung.ended:
	case <-time.After(2 * healthTimeout):
		t.Fatal("the health check did not time out")
	}
	kit.Eventually(t, 30*time.Second, "the next run checks the cluster again", func() error {
		if n := hung.versionChecks(); n < 2 {
			return fmt.Errorf("%d checks", n)
		}
		return nil
	})
	got := &picchuv1alpha1.Cluster{}
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(cl), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) > 0 || got.Status.Health != nil {
		t.Errorf("the Cluster's status was written after its shard was lost: %+v", got.Status)
	}
}

// keys2 maps each of two shards to an app key in it.
var keys2 = func() map[int]string {
	out := map[int]string{}
	for i := 0; len(out) < 2; i++ {
		k := shard.AppKey("apps", fmt.Sprintf("app-%d", i))
		if _, ok := out[shard.Of(k, 2)]; !ok {
			out[shard.Of(k, 2)] = k
		}
	}
	return out
}()
