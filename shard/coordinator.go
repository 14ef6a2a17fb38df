package shard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// LabelSet names the set of shards a Lease belongs to.
	LabelSet = "picchu.medium.engineering/shard-set"
	// LabelRole says what a Lease is: "shard" (held by the replica driving
	// it) or "replica" (renewed by a live replica, so others count it).
	LabelRole = "picchu.medium.engineering/shard-role"
	// AnnotationShards is the number of shards a replica runs with.
	AnnotationShards = "picchu.medium.engineering/shards"

	roleShard   = "shard"
	roleReplica = "replica"

	// Defaults of Config, controller-runtime's leader election's.
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Config sets up a Coordinator.
type Config struct {
	// Client reads and writes Leases on the API server, not a cache.
	Client client.Client
	// Namespace holds the Leases, named Name-shard-<i> and
	// Name-replica-<identity>.
	Namespace, Name string
	// Identity names this replica; unique among replicas.
	Identity string
	// Shards is the number of shards, at least 2.
	Shards int
	// LeaseDuration is how long others wait after a shard's last renewal
	// they saw before they take it; RenewDeadline (shorter) how long after
	// its last renewal this replica stops acting on a shard it could not
	// renew; RetryPeriod how often leases are renewed and shards balanced.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Clock is the clock (clock.RealClock when nil).
	Clock clock.WithDelayedExecution
	Log   logr.Logger
}

// Coordinator holds this replica's shards through Leases. It is a
// controller-runtime Runnable that runs on every replica (no leader
// election): when its context ends it stops work on its shards (the runs
// under way have their contexts cancelled), waits for those runs to
// return, and releases their Leases at once.
type Coordinator struct {
	cfg  Config
	set  *Set
	seen map[string]observed
	// mine are the shards this process holds or is taking.
	mine map[int]bool

	mu     sync.Mutex
	subs   []*subscriber
	onDrop []func(shard int)
}

// observed is when this replica last saw a Lease change, by its own clock:
// holders' clocks are never compared.
type observed struct {
	version string
	at      time.Time
}

// New checks cfg and returns its Coordinator.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Shards < 2 {
		return nil, fmt.Errorf("shards: %d shards, need at least 2", cfg.Shards)
	}
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Name == "" || cfg.Identity == "" {
		return nil, errors.New("shards: client, namespace, name and identity are required")
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewDeadline <= 0 {
		cfg.RenewDeadline = DefaultRenewDeadline
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = DefaultRetryPeriod
	}
	if cfg.RenewDeadline >= cfg.LeaseDuration || cfg.RetryPeriod >= cfg.RenewDeadline {
		return nil, fmt.Errorf("shards: need retry period (%s) < renew deadline (%s) < lease duration (%s)",
			cfg.RetryPeriod, cfg.RenewDeadline, cfg.LeaseDuration)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Coordinator{
		cfg:  cfg,
		set:  NewSet(cfg.Shards, cfg.Clock),
		seen: map[string]observed{},
		mine: map[int]bool{},
	}, nil
}

// Set is what controllers ask before they act on an app; nil (every app
// held) for a nil Coordinator.
func (c *Coordinator) Set() *Set {
	if c == nil {
		return nil
	}
	return c.set
}

// NeedLeaderElection is false: every replica runs its Coordinator.
func (c *Coordinator) NeedLeaderElection() bool { return false }

// Start balances and renews shards every retry period until ctx ends, then
// releases them.
func (c *Coordinator) Start(ctx context.Context) error {
	c.cfg.Log.Info("holding shards through leases", "shards", c.cfg.Shards, "identity", c.cfg.Identity,
		"namespace", c.cfg.Namespace, "leaseDuration", c.cfg.LeaseDuration.String())
	t := time.NewTicker(c.cfg.RetryPeriod)
	defer t.Stop()
	for {
		if err := c.tick(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Log.Error(err, "balancing shards")
		}
		select {
		case <-ctx.Done():
			return c.releaseAll()
		case <-t.C:
		}
	}
}

// ShardName is the name of shard i's Lease.
func (c *Coordinator) ShardName(i int) string { return c.cfg.Name + "-shard-" + strconv.Itoa(i) }

// replicaName is the name of this replica's Lease.
func (c *Coordinator) replicaName() string {
	return c.cfg.Name + "-replica-" + labelSafe(c.cfg.Identity, 63-len(c.cfg.Name)-len("-replica-"))
}

// tick renews what this replica holds, then takes or gives back shards as
// Decide says.
func (c *Coordinator) tick(ctx context.Context) error {
	list := &coordinationv1.LeaseList{}
	if err := c.cfg.Client.List(ctx, list, client.InNamespace(c.cfg.Namespace), client.MatchingLabels{LabelSet: c.cfg.Name}); err != nil {
		return fmt.Errorf("listing shard leases in %s: %w", c.cfg.Namespace, err)
	}
	now := c.cfg.Clock.Now()
	shards := map[string]*coordinationv1.Lease{}
	view := View{Me: c.cfg.Identity, Shards: c.cfg.Shards, Live: 1}
	var me *coordinationv1.Lease
	for i := range list.Items {
		l := &list.Items[i]
		fresh := c.fresh(l, now)
		switch {
		case l.Labels[LabelRole] == roleShard:
			shards[l.Name] = l
		case l.Name == c.replicaName():
			me = l
		case fresh:
			view.Live++
			view.Mixed = view.Mixed || l.Annotations[AnnotationShards] != strconv.Itoa(c.cfg.Shards)
		case now.Sub(c.seen[l.Name].at) > 10*c.cfg.LeaseDuration:
			c.forgetReplica(ctx, l)
		}
	}
	if err := c.renewReplica(ctx, me); err != nil {
		return err
	}
	for i := range c.cfg.Shards {
		l := shards[c.ShardName(i)]
		switch {
		case c.mine[i]:
			if c.renew(ctx, i, l) {
				view.Held = append(view.Held, i)
			}
		case l == nil || holder(l) == "" || !c.fresh(l, now):
			view.Free = append(view.Free, i)
		}
	}
	plan := Decide(view)
	for _, i := range plan.Release {
		c.release(ctx, i, shards[c.ShardName(i)])
	}
	for _, i := range plan.Acquire {
		c.acquire(ctx, i, shards[c.ShardName(i)])
	}
	return nil
}

// fresh says whether l changed within its lease duration, as this replica
// saw it.
func (c *Coordinator) fresh(l *coordinationv1.Lease, now time.Time) bool {
	o, ok := c.seen[l.Name]
	if !ok || o.version != l.ResourceVersion {
		o = observed{version: l.ResourceVersion, at: now}
		c.seen[l.Name] = o
	}
	d := c.cfg.LeaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Sub(o.at) < d
}

func holder(l *coordinationv1.Lease) string { return ptr.Deref(l.Spec.HolderIdentity, "") }

// renewReplica creates or renews this replica's Lease, which others count.
func (c *Coordinator) renewReplica(ctx context.Context, l *coordinationv1.Lease) error {
	if l == nil {
		l = c.newLease(c.replicaName(), roleReplica)
		if err := c.cfg.Client.Create(ctx, l); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating replica lease %s/%s: %w", c.cfg.Namespace, l.Name, err)
		}
		return nil
	}
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(c.cfg.Clock.Now()))
	if err := c.cfg.Client.Update(ctx, l); err != nil {
		return fmt.Errorf("renewing replica lease %s/%s: %w", c.cfg.Namespace, l.Name, err)
	}
	return nil
}

// forgetReplica deletes the Lease of a replica gone for long.
func (c *Coordinator) forgetReplica(ctx context.Context, l *coordinationv1.Lease) {
	pre := client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}
	if err := c.cfg.Client.Delete(ctx, l, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		c.cfg.Log.Error(err, "deleting the lease of a replica gone", "lease", l.Name)
		return
	}
	delete(c.seen, l.Name)
}

func (c *Coordinator) newLease(name, role string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(c.cfg.Clock.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.cfg.Namespace,
			Labels:      map[string]string{LabelSet: c.cfg.Name, LabelRole: role},
			Annotations: map[string]string{AnnotationShards: strconv.Itoa(c.cfg.Shards)},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(c.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32((c.cfg.LeaseDuration + time.Second - 1) / time.Second)),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
}

// renew renews shard i's Lease and extends the hold on it; a Lease that
// names another holder, or is gone, means the shard was lost.
func (c *Coordinator) renew(ctx context.Context, i int, l *coordinationv1.Lease) bool {
	if l == nil || holder(l) != c.cfg.Identity {
		c.lose(i, "its lease names another holder")
		return false
	}
	start := c.cfg.Clock.Now()
	l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(start))
	if err := c.cfg.Client.Update(ctx, l); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.lose(i, err.Error())
		} else {
			// The hold runs out by itself at the renew deadline.
			c.cfg.Log.Error(err, "renewing a shard's lease", "shard", i)
		}
		return false
	}
	c.set.hold(i, start.Add(c.cfg.RenewDeadline))
	return true
}

// lose stops work on a shard another replica may already hold.
func (c *Coordinator) lose(i int, why string) {
	delete(c.mine, i)
	c.set.stop(i)
	changed(i, "lost", false)
	c.dropped(i)
	c.cfg.Log.Info("lost a shard", "shard", i, "why", why)
}

// acquire takes shard i through its Lease, creating it the first time.
func (c *Coordinator) acquire(ctx context.Context, i int, l *coordinationv1.Lease) {
	start := c.cfg.Clock.Now()
	var err error
	if l == nil {
		err = c.cfg.Client.Create(ctx, c.newLease(c.ShardName(i), roleShard))
	} else {
		fresh := c.newLease(l.Name, roleShard)
		l.Labels, l.Annotations = fresh.Labels, fresh.Annotations
		transitions := ptr.Deref(l.Spec.LeaseTransitions, 0) + 1
		l.Spec = fresh.Spec
		l.Spec.LeaseTransitions = &transitions
		err = c.cfg.Client.Update(ctx, l)
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			c.cfg.Log.Error(err, "taking a shard", "shard", i)
		}
		return
	}
	c.mine[i] = true
	c.set.hold(i, start.Add(c.cfg.RenewDeadline))
	changed(i, "acquired", true)
	c.cfg.Log.Info("acquired a shard", "shard", i)
	c.notify(i)
}

// release stops work on shard i (the work under way has its context
// cancelled), waits up to the renew deadline for that work to return, and
// gives the Lease back. Work still running then keeps
// the Lease from being given back: it runs out a lease duration after its
// last renewal, as if this replica had died.
func (c *Coordinator) release(ctx context.Context, i int, l *coordinationv1.Lease) {
	delete(c.mine, i)
	wait, cancel := context.WithTimeout(ctx, c.cfg.RenewDeadline)
	defer cancel()
	idle := c.set.drop(wait, i)
	changed(i, "released", false)
	c.dropped(i)
	if !idle || l == nil || holder(l) != c.cfg.Identity {
		c.cfg.Log.Info("gave up a shard without releasing its lease", "shard", i, "workDone", idle)
		return
	}
	l.Spec.HolderIdentity = ptr.To("")
	l.Spec.AcquireTime, l.Spec.RenewTime = nil, nil
	if err := c.cfg.Client.Update(ctx, l); err != nil {
		c.cfg.Log.Error(err, "releasing a shard's lease; it runs out by itself", "shard", i)
		return
	}
	c.cfg.Log.Info("released a shard", "shard", i)
}

// releaseAll gives back every shard and this replica's Lease, on the way
// out, within the renew deadline: past it, the Leases run out by
// themselves.
func (c *Coordinator) releaseAll() error {
	// The work on every shard is told to stop at once, not shard by shard
	// as each is given back.
	for i := range c.cfg.Shards {
		if c.mine[i] {
			c.set.stop(i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RenewDeadline)
	defer cancel()
	var errs []error
	for i := range c.cfg.Shards {
		if !c.mine[i] {
			continue
		}
		l := &coordinationv1.Lease{}
		if err := c.cfg.Client.Get(ctx, client.ObjectKey{Namespace: c.cfg.Namespace, Name: c.ShardName(i)}, l); err != nil {
			errs = append(errs, fmt.Errorf("reading the lease of shard %d to release it: %w", i, err))
			l = nil
		}
		c.release(ctx, i, l)
	}
	replica := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: c.cfg.Namespace, Name: c.replicaName()}}
	if err := client.IgnoreNotFound(c.cfg.Client.Delete(ctx, replica)); err != nil {
		errs = append(errs, fmt.Errorf("deleting replica lease %s: %w", replica.Name, err))
	}
	return errors.Join(errs...)
}

// labelSafe makes s a DNS label fragment of at most n characters.
func labelSafe(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Trim(out, "-")
}
