package access

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/fleet/throttle"
)

// Registry keeps one client and one informer cache per target cluster, built
// from the Cluster and its Secret, reused until either changes. The caches
// hold only Picchu-managed objects (those labelled with an app). A change to
// a remote ReplicaSet is reported to OnReplicaSet as the ReleaseManager
// ("<app>-<target>" in the Cluster's namespace) that owns it.
type Registry struct {
	scheme       *runtime.Scheme
	log          logr.Logger
	onReplicaSet func(releaseManager types.NamespacedName)

	// WrapTransport, when set before the first Ensure, wraps the transport
	// of every client the registry builds (tests count requests with it).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Policy, set before the first Ensure, says which credentials are
	// accepted (the zero value: inline tokens and client certificates).
	Policy Policy
	// QPS and Burst, set before the first Ensure, are the rate limit of each
	// cluster's client (throttle's defaults when 0); the waits on it are
	// observed as the Cluster's "<namespace>/<name>".
	QPS   float32
	Burst int
	// Breaker, set before the first Ensure, is the policy of each
	// cluster's circuit breaker (package breaker's defaults when zero).
	Breaker breaker.Policy
	// Now, set before the first Ensure, is the clock of the breakers and
	// of the backoff between rebuilds (time.Now when nil).
	Now func() time.Time
	// Transform, set before the first Ensure, is applied to every object
	// before a cluster's cache stores it (see cache.Options'
	// DefaultTransform); nil stores objects as listed.
	Transform toolscache.TransformFunc

	mu       sync.Mutex
	clusters map[types.NamespacedName]*entry
	// breakers are the clusters' circuit breakers (see breakerFor).
	breakers map[types.NamespacedName]*breaker.Breaker
	// forgotten are called with the key of every cluster removed or replaced.
	forgotten []func(types.NamespacedName)

	// rebuildMu guards rebuilds, apart from mu: the breakers report to
	// rebuildDue from requests, which may run with mu held.
	rebuildMu sync.Mutex
	rebuilds  map[types.NamespacedName]*rebuilds
}

// now is the registry's clock.
func (r *Registry) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// OnForget registers f, called (without the registry's lock held) with the
// key of every cluster the registry stops and forgets, or replaces with one
// built from new settings: whoever keeps something per cluster client
// drops it then.
func (r *Registry) OnForget(f func(key types.NamespacedName)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgotten = append(r.forgotten, f)
}

// forget stops e and tells the OnForget functions. It is called with r.mu
// held, and returns the functions to call once it is released.
func (r *Registry) forget(key types.NamespacedName, e *entry) []func(types.NamespacedName) {
	e.stop()
	delete(r.clusters, key)
	throttle.Forget(key.String())
	return slices.Clone(r.forgotten)
}

// tell calls each of fs with key.
func tell(fs []func(types.NamespacedName), key types.NamespacedName) {
	for _, f := range fs {
		f(key)
	}
}

type entry struct {
	cluster cluster.Cluster
	config  *rest.Config
	hash    [sha256.Size]byte
	stop    context.CancelFunc
}

// NewRegistry returns an empty registry whose clients use scheme. When
// onReplicaSet is not nil, it is called with the owning ReleaseManager of
// every added, changed or deleted Picchu-managed ReplicaSet on any cluster.
func NewRegistry(scheme *runtime.Scheme, log logr.Logger, onReplicaSet func(releaseManager types.NamespacedName)) *Registry {
	return &Registry{
		scheme:       scheme,
		log:          log,
		onReplicaSet: onReplicaSet,
		clusters:     map[types.NamespacedName]*entry{},
		breakers:     map[types.NamespacedName]*breaker.Breaker{},
		rebuilds:     map[types.NamespacedName]*rebuilds{},
	}
}

// Ensure makes the registry hold a started cluster for the Cluster built from
// its current spec and Secret. It rebuilds the cluster only when the server,
// CA or credentials changed, and reports whether it did. The caches start in
// the background: an unreachable cluster never blocks Ensure.
func (r *Registry) Ensure(ctx context.Context, c *picchuv1alpha1.Cluster, secret *corev1.Secret) (rebuilt bool, err error) {
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	hash, err := credentialsHash(c, secret)
	if err != nil {
		return false, err
	}
	var told []func(types.NamespacedName)
	defer func() { tell(told, key) }() // after the unlock below: deferred first
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.clusters[key]; ok {
		if old.hash == hash {
			return false, nil
		}
		told = r.forget(key, old)
	}
	cfg, err := r.Policy.RESTConfig(c, secret)
	if err != nil {
		return false, err
	}
	throttle.Limit(cfg, key.String(), r.QPS, r.Burst)
	if r.WrapTransport != nil {
		cfg.Wrap(r.WrapTransport)
	}
	// Outermost: a request the breaker refuses is never sent, nor counted.
	cfg.Wrap(guard(r.breakerFor(key)))
	e, err := r.start(context.WithoutCancel(ctx), key, cfg, hash)
	if err != nil {
		return false, err
	}
	r.clusters[key] = e
	return true, nil
}

// start builds and starts the client and caches of the cluster key from
// cfg. Called with r.mu held.
func (r *Registry) start(ctx context.Context, key types.NamespacedName, cfg *rest.Config, hash [sha256.Size]byte) (*entry, error) {
	managed, err := labels.NewRequirement(picchuv1alpha1.LabelApp, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("building label selector: %w", err)
	}
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = r.scheme
		o.Cache.DefaultLabelSelector = labels.NewSelector().Add(*managed)
		o.Cache.DefaultTransform = r.Transform
		// Plans read objects of any kind as unstructured: from the cache too.
		o.Client.Cache = &client.CacheOptions{Unstructured: true}
	})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: creating client: %w", key, err)
	}
	// The cluster runs until it is replaced or removed.
	runCtx, stop := context.WithCancel(ctx)
	log := r.log.WithValues("cluster", key.String())
	go func() {
		if err := cl.Start(runCtx); err != nil {
			log.Error(err, "remote cache stopped")
		}
	}()
	if r.onReplicaSet != nil {
		go r.watchReplicaSets(runCtx, cl.GetCache(), key.Namespace, log)
	}
	return &entry{cluster: cl, config: cfg, hash: hash, stop: stop}, nil
}

// restart builds the client and caches of the cluster key again from the
// same settings: called when its breaker closes after being open (at most
// as often as rebuildDue allows), so that its informers list the cluster
// at once rather than at the end of the backoff their failures while it
// was away built up.
func (r *Registry) restart(key types.NamespacedName) {
	r.mu.Lock()
	old, ok := r.clusters[key]
	if !ok {
		r.mu.Unlock()
		return
	}
	told := r.forget(key, old)
	e, err := r.start(context.Background(), key, old.config, old.hash)
	if err != nil {
		r.log.Error(err, "restarting the client of a cluster that is back", "cluster", key.String())
	} else {
		r.clusters[key] = e
	}
	r.mu.Unlock()
	tell(told, key)
}

// Get returns the cluster registered for key.
func (r *Registry) Get(key types.NamespacedName) (cluster.Cluster, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.clusters[key]
	if !ok {
		return nil, false
	}
	return e.cluster, true
}

// Remove stops and forgets the cluster registered for key, if any, and its
// circuit breaker.
func (r *Registry) Remove(key types.NamespacedName) {
	r.mu.Lock()
	var told []func(types.NamespacedName)
	if e, ok := r.clusters[key]; ok {
		told = r.forget(key, e)
	}
	r.forgetHealth(key)
	r.mu.Unlock()
	tell(told, key)
}

// ServerVersion asks the cluster registered for key for its version, within
// timeout, through its circuit breaker: an open breaker fails it at once
// (errors.Is(err, breaker.ErrOpen)), and once its backoff has passed the
// check is the probe that closes it again. Its latency is observed in
// picchu_cluster_health_check_seconds.
func (r *Registry) ServerVersion(key types.NamespacedName, timeout time.Duration) (string, time.Duration, error) {
	r.mu.Lock()
	e, ok := r.clusters[key]
	r.mu.Unlock()
	if !ok {
		return "", 0, fmt.Errorf("cluster %s is not registered", key)
	}
	cfg := rest.CopyConfig(e.config)
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", 0, fmt.Errorf("cluster %s: building discovery client: %w", key, err)
	}
	start := time.Now()
	v, err := dc.ServerVersion()
	took := time.Since(start)
	switch {
	case errors.Is(err, breaker.ErrOpen):
		// Not sent: nothing to observe.
		return "", 0, fmt.Errorf("cluster %s: %w", key, err)
	case err != nil:
		healthChecks.WithLabelValues(key.String(), "error").Observe(took.Seconds())
		return "", took, fmt.Errorf("cluster %s: %w", key, err)
	}
	healthChecks.WithLabelValues(key.String(), "ok").Observe(took.Seconds())
	return v.GitVersion, took, nil
}

// watchReplicaSets reports the owning ReleaseManager of every changed
// Picchu-managed ReplicaSet. It waits for the cache to start, so it runs in
// its own goroutine.
func (r *Registry) watchReplicaSets(ctx context.Context, c cache.Cache, namespace string, log logr.Logger) {
	// The cluster may be unreachable now; keep trying until it answers or
	// the cluster is replaced.
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: time.Minute}
	var informer cache.Informer
	for {
		var err error
		if informer, err = c.GetInformer(ctx, &appsv1.ReplicaSet{}); err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "watching ReplicaSets; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
	}
	send := func(obj any) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			if tomb, isTomb := obj.(toolscache.DeletedFinalStateUnknown); isTomb {
				rs, ok = tomb.Obj.(*appsv1.ReplicaSet)
			}
		}
		if !ok {
			return
		}
		app, target := rs.Labels[picchuv1alpha1.LabelApp], rs.Labels[picchuv1alpha1.LabelTarget]
		if app == "" || target == "" {
			return
		}
		r.onReplicaSet(types.NamespacedName{Namespace: namespace, Name: picchuv1alpha1.ReleaseManagerName(app, target)})
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: send,
		UpdateFunc: func(old, obj any) {
			if replicaSetMoved(old, obj) {
				send(obj)
			}
		},
		DeleteFunc: send,
	}); err != nil {
		log.Error(err, "watching ReplicaSets")
	}
}

// replicaSetMoved says a change of a ReplicaSet from old to obj is one a
// release decides from: its spec (generation), labels, annotations,
// managed fields (the replicas' owner) or deletion, or its available
// pods, but those a build scaled to nothing loses (no decision reads
// them: a build with no replicas takes no traffic and counts no pods).
// The ReplicaSet controller's other status updates (replicas created,
// ready, fully labelled, the generation observed) run no release: each
// would cost a run per cluster of every app whose pods move.
func replicaSetMoved(old, obj any) bool {
	a, okOld := old.(*appsv1.ReplicaSet)
	b, okNew := obj.(*appsv1.ReplicaSet)
	if !okOld || !okNew {
		return true
	}
	if a.Generation != b.Generation || !maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
		!a.DeletionTimestamp.Equal(b.DeletionTimestamp) || !equality.Semantic.DeepEqual(a.ManagedFields, b.ManagedFields) {
		return true
	}
	if a.Status.AvailableReplicas == b.Status.AvailableReplicas {
		return false
	}
	scaledDown := b.Spec.Replicas != nil && *b.Spec.Replicas == 0
	return !scaledDown || b.Status.AvailableReplicas > a.Status.AvailableReplicas
}

// credentialsHash identifies what a cluster's client is built from.
func credentialsHash(c *picchuv1alpha1.Cluster, secret *corev1.Secret) ([sha256.Size]byte, error) {
	data, err := json.Marshal(struct {
		Config *picchuv1alpha1.ClusterConfig
		Auth   []byte
	}{c.Spec.Config, secret.Data[AuthInfoKey]})
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("cluster %s/%s: hashing credentials: %w", c.Namespace, c.Name, err)
	}
	return sha256.Sum256(data), nil
}
