package clustersecrets

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/shard"
)

// Defaults of the Reconciler's settings.
const (
	// DefaultSyncPeriod is how long a ClusterSecrets whose copies are all in
	// line goes without a run when nothing happens (a run then reads only
	// caches and writes nothing).
	DefaultSyncPeriod = 15 * time.Minute
	// DefaultClusterTimeout bounds the work of one run on one cluster.
	DefaultClusterTimeout = 30 * time.Second
)

// Reasons of the events on a ClusterSecrets, besides its conditions'.
const (
	// ReasonCopied: copies were created, updated or deleted.
	ReasonCopied = "Copied"
	// ReasonCredentialsNotCopied: the selectors select Secrets that hold
	// credentials, which are never copied.
	ReasonCredentialsNotCopied = "CredentialsNotCopied"
)

// Reconciler copies the Secrets a ClusterSecrets selects in the delivery
// cluster to every enabled Cluster it selects, and removes the copies it
// made that are no longer wanted (see package doc and docs/clustersecrets.md).
type Reconciler struct {
	// Client reads from the delivery cluster's cache and writes to it.
	Client client.Client
	// Registry gives the client of each target cluster.
	Registry *access.Registry
	// Recorder records events on ClusterSecrets; may be nil.
	Recorder events.EventRecorder
	// Namespaces are those whose Secrets the operator's cache holds (every
	// namespace when empty): a ClusterSecrets whose source is elsewhere is
	// Stalled.
	Namespaces []string
	// CrossNamespaceSources are the namespaces a ClusterSecrets of another
	// namespace may copy Secrets from (--allow-cross-namespace-sources):
	// one whose source is another namespace, not among them, is Stalled
	// and copies nothing. None when empty: each copies only from its own.
	CrossNamespaceSources []string
	// ProtectedNamespaces are the namespaces of the target clusters no
	// copy is ever written to (picchuv1alpha1.ProtectedNamespaces: the
	// defaults and --protected-namespaces): a ClusterSecrets whose target
	// is one is Stalled and copies nothing.
	ProtectedNamespaces []string
	// SyncPeriod is the safety resync (DefaultSyncPeriod when 0).
	SyncPeriod time.Duration
	// ClusterTimeout bounds the work on one cluster in one run
	// (DefaultClusterTimeout when 0).
	ClusterTimeout time.Duration
	// MaxConcurrentReconciles is the number of ClusterSecrets worked on at
	// once (1 when 0).
	MaxConcurrentReconciles int
	// Shards, when set, say which replica acts on a ClusterSecrets: the
	// one holding its shard.
	Shards *shard.Coordinator

	copies  *copies
	changes *controllers.Notifications
	// failures counts, per ClusterSecrets, the runs in a row that left
	// something to retry.
	failures sync.Map
}

// SetupWithManager watches ClusterSecrets, the Clusters they may select, the
// Secrets of the delivery cluster's cache, and the copies on every target.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.SyncPeriod <= 0 {
		r.SyncPeriod = DefaultSyncPeriod
	}
	if r.ClusterTimeout <= 0 {
		r.ClusterTimeout = DefaultClusterTimeout
	}
	r.changes = controllers.NewNotifications("copies on target clusters")
	r.copies = newCopies(mgr.GetLogger().WithName("clustersecrets"), r.changes.Notify)
	// The cache of a cluster's copies goes with the registry's client.
	r.Registry.OnForget(r.copies.forget)
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.ClusterSecrets{}, builder.WithPredicates(controllers.MetadataOrSpecChanged(controllers.MetadataChanges{}))).
		// A Cluster enabled, selected, ready again or gone.
		Watches(&picchuv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.ofCluster)).
		// A source Secret created, changed (rotated, relabelled) or deleted.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.ofSecret)).
		// A copy changed or deleted on a target.
		WatchesRawSource(r.changes).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles),
			ReconciliationTimeout:   2*r.ClusterTimeout + time.Minute,
		}).
		Named("clustersecrets")
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("clustersecrets", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.ClusterSecretsList{} }, shardKey))
	}
	if err := b.Complete(r); err != nil {
		return fmt.Errorf("building the clustersecrets controller: %w", err)
	}
	return nil
}

// shardKey is the shard key of a ClusterSecrets.
func shardKey(obj client.Object) string {
	return "clustersecrets:" + obj.GetNamespace() + "/" + obj.GetName()
}

// ofCluster maps a Cluster to the ClusterSecrets of its namespace.
func (r *Reconciler) ofCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	return controllers.Requests(ctx, r.Client, &picchuv1alpha1.ClusterSecretsList{}, "clustersecrets",
		[]any{"namespace", obj.GetNamespace()}, client.InNamespace(obj.GetNamespace()))
}

// ofSecret maps a Secret of the delivery cluster to the ClusterSecrets whose
// source is its namespace: whether their selectors select it now or did
// before, they decide.
func (r *Reconciler) ofSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &picchuv1alpha1.ClusterSecretsList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing clustersecrets for a change of a secret", "namespace", obj.GetNamespace())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.Source.Namespace == obj.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Reconcile brings the copies of one ClusterSecrets in line on every
// enabled cluster of its namespace, and records how it went.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cs := &picchuv1alpha1.ClusterSecrets{}
	forget := func(key types.NamespacedName) { r.failures.Delete(key) }
	run, err := controllers.Prologue{What: "clustersecrets", ShardKey: shardKey, Gone: forget}.Begin(ctx, r.Client, r.Shards, req, cs)
	if run == nil {
		return ctrl.Result{}, err
	}
	defer run.Done()
	// The run stops, its writes unsent, once this replica no longer
	// holds the object's shard.
	ctx = run.Ctx
	if picchuv1alpha1.Ignored(cs.Labels) {
		return ctrl.Result{}, nil
	}
	if !cs.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, cs)
	}
	if !controllerutil.ContainsFinalizer(cs, Finalizer) {
		before := cs.DeepCopy()
		controllerutil.AddFinalizer(cs, Finalizer)
		if err := r.Client.Patch(ctx, cs, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding the finalizer of clustersecrets %s: %w", req.NamespacedName, err)
		}
	}

	out, changes, err := r.sync(ctx, cs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.record(ctx, cs, out, changes); err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case out.Clean():
		r.failures.Delete(req.NamespacedName)
		return ctrl.Result{RequeueAfter: r.SyncPeriod}, nil
	case out.Refused():
		return ctrl.Result{}, nil // only a change of the spec or of the operator can help
	}
	return ctrl.Result{RequeueAfter: r.retryAfter(req.NamespacedName)}, nil
}

// retryAfter counts one more failed run of the ClusterSecrets key and says
// when to try again.
func (r *Reconciler) retryAfter(key types.NamespacedName) time.Duration {
	n := 1
	if v, ok := r.failures.Load(key); ok {
		n = v.(int) + 1
	}
	r.failures.Store(key, n)
	return RetryAfter(n)
}

// sync copies what cs selects to the clusters it selects and removes its
// copies that are no longer wanted, on every enabled cluster of its
// namespace at once. Its error is the delivery cluster's; the clusters'
// are in the outcome.
func (r *Reconciler) sync(ctx context.Context, cs *picchuv1alpha1.ClusterSecrets) (Outcome, []string, error) {
	sel, problems := Parse(cs)
	if len(problems) > 0 {
		return Outcome{Problems: problems}, nil, nil
	}
	// Refused before anything is read, and before whether it can be read
	// at all: the fix is the same either way.
	if !controllers.SourcesAllowed(cs.Namespace, sel.SourceNamespace, r.CrossNamespaceSources) {
		return Outcome{NotAllowed: sel.SourceNamespace, Home: cs.Namespace}, nil, nil
	}
	if p, ok := picchuv1alpha1.ProtectedNamespace(sel.TargetNamespace, r.ProtectedNamespaces); ok {
		return Outcome{Protected: sel.TargetNamespace, Pattern: p}, nil, nil
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, sel.SourceNamespace) {
		return Outcome{NotWatched: sel.SourceNamespace}, nil, nil
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(sel.SourceNamespace)); err != nil {
		return Outcome{}, nil, fmt.Errorf("listing the secrets of namespace %s: %w", sel.SourceNamespace, err)
	}
	sourceClusters := &picchuv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, sourceClusters, client.InNamespace(sel.SourceNamespace)); err != nil {
		return Outcome{}, nil, fmt.Errorf("listing the clusters of namespace %s, whose secrets are never copied: %w", sel.SourceNamespace, err)
	}
	isCluster := map[string]bool{}
	for _, c := range sourceClusters.Items {
		isCluster[c.Name] = true
	}
	clusters := &picchuv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters, client.InNamespace(cs.Namespace)); err != nil {
		return Outcome{}, nil, fmt.Errorf("listing the clusters of namespace %s: %w", cs.Namespace, err)
	}
	copied, withheld := SelectSecrets(sel, secrets.Items, isCluster)
	selected, others := SelectClusters(sel, clusters.Items)
	wanted := Copies(sel, copied)

	out := Outcome{Withheld: withheld, Secrets: make([]string, 0, len(copied))}
	for _, s := range copied {
		out.Secrets = append(out.Secrets, s.Name)
	}
	runs := r.onClusters(ctx, sel.Owner, slices.Concat(selected, others), func(i int) []*corev1.Secret {
		if i < len(selected) {
			return wanted
		}
		return nil // every copy it made goes
	})
	var changes []string
	for i, run := range runs {
		if i < len(selected) {
			out.Clusters = append(out.Clusters, run.result)
		} else if run.listed && (run.result.Problem != "" || len(run.result.Conflicts) > 0) {
			// A cluster no longer selected that holds copies it could not
			// remove. One that cannot be reached is not known to hold any:
			// its Cluster's next change (Ready again) brings a run.
			out.Clusters = append(out.Clusters, run.result)
		}
		if len(run.changes) > 0 {
			changes = append(changes, run.result.Cluster+": "+strings.Join(run.changes, ", "))
		}
	}
	return out, changes, nil
}

// finalize removes the copies of cs from every enabled cluster of its
// namespace, then its finalizer. An enabled cluster that cannot be reached
// holds the finalizer until it can, or until its Cluster is disabled or
// deleted: Picchu has no client for it then, and gives it up (its copies
// stay there, with their ownership marks).
func (r *Reconciler) finalize(ctx context.Context, cs *picchuv1alpha1.ClusterSecrets) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(cs)
	if !controllerutil.ContainsFinalizer(cs, Finalizer) {
		return ctrl.Result{}, nil
	}
	list := &picchuv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cs.Namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the clusters of namespace %s: %w", cs.Namespace, err)
	}
	var enabled []*picchuv1alpha1.Cluster
	for i := range list.Items {
		if c := &list.Items[i]; c.Spec.Enabled && c.DeletionTimestamp.IsZero() {
			enabled = append(enabled, c)
		}
	}
	slices.SortFunc(enabled, func(a, b *picchuv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	owner := key.String()
	runs := r.onClusters(ctx, owner, enabled, func(int) []*corev1.Secret { return nil })
	out := Outcome{Deleting: true, Secrets: cs.Status.Secrets}
	var changes []string
	for _, run := range runs {
		if run.result.Problem != "" {
			out.Clusters = append(out.Clusters, run.result)
		}
		if len(run.changes) > 0 {
			changes = append(changes, run.result.Cluster+": "+strings.Join(run.changes, ", "))
		}
	}
	if len(out.Clusters) > 0 {
		if err := r.record(ctx, cs, out, changes); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: r.retryAfter(key)}, nil
	}
	if len(changes) > 0 {
		r.event(cs, corev1.EventTypeNormal, ReasonCopied, "Delete", "removed: "+strings.Join(changes, "; "))
	}
	before := cs.DeepCopy()
	controllerutil.RemoveFinalizer(cs, Finalizer)
	if err := r.Client.Patch(ctx, cs, client.MergeFrom(before)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer of clustersecrets %s: %w", key, err)
	}
	r.failures.Delete(key)
	return ctrl.Result{}, nil
}

// record writes the status of cs from the outcome of a run, only when it
// changed, with events for the copies changed and for a Ready condition
// that changed to False or names Secrets withheld.
func (r *Reconciler) record(ctx context.Context, cs *picchuv1alpha1.ClusterSecrets, out Outcome, changes []string) error {
	if len(changes) > 0 {
		r.event(cs, corev1.EventTypeNormal, ReasonCopied, "Copy", strings.Join(changes, "; "))
	}
	before := cs.DeepCopy()
	cs.Status.ObservedGeneration = cs.Generation
	if !out.Refused() && !out.Deleting {
		// Else nothing was acted on: the Secrets copied stay those last copied.
		cs.Status.Secrets = out.Secrets
		if len(cs.Status.Secrets) == 0 {
			cs.Status.Secrets = nil
		}
	}
	SetConditions(&cs.Status.Conditions, cs.Generation, out)
	if equality.Semantic.DeepEqual(before.Status, cs.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, cs, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the status of clustersecrets %s/%s: %w", cs.Namespace, cs.Name, err)
	}
	was := meta.FindStatusCondition(before.Status.Conditions, picchuv1alpha1.ConditionReady)
	now := meta.FindStatusCondition(cs.Status.Conditions, picchuv1alpha1.ConditionReady)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message) {
		return nil
	}
	if now.Status != metav1.ConditionTrue {
		r.event(cs, corev1.EventTypeWarning, now.Reason, "Copy", now.Message)
	}
	if len(out.Withheld) > 0 {
		r.event(cs, corev1.EventTypeWarning, ReasonCredentialsNotCopied, "Copy", withheldMessage(out.Withheld))
	}
	return nil
}

func (r *Reconciler) event(cs *picchuv1alpha1.ClusterSecrets, eventType, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(cs, nil, eventType, reason, action, "%s", truncate(note))
	}
}

// clusterRun is how one cluster went.
type clusterRun struct {
	result ClusterResult
	// listed: the cluster's copies were read, so whether it holds any is known.
	listed bool
	// changes say what was written, by name.
	changes []string
}

// onClusters brings the copies of owner in line on every cluster at once,
// each within ClusterTimeout: wanted says which copies a cluster should
// have (by its index). One cluster's failure, slowness or panic never stops the others.
// The runs are in the order of clusters.
func (r *Reconciler) onClusters(ctx context.Context, owner string, clusters []*picchuv1alpha1.Cluster,
	wanted func(i int) []*corev1.Secret) []clusterRun {
	runs := make([]clusterRun, len(clusters))
	var wg sync.WaitGroup
	for i, cl := range clusters {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, r.ClusterTimeout)
			defer cancel()
			defer func() {
				if p := recover(); p != nil {
					ctrl.LoggerFrom(ctx).Error(fmt.Errorf("%v", p), "clustersecrets run panicked",
						"cluster", cl.Name, "stack", string(debug.Stack()))
					runs[i] = clusterRun{result: ClusterResult{Cluster: cl.Name, Problem: "the run panicked (see the operator's log)"}}
				}
			}()
			runs[i] = r.onCluster(ctx, owner, cl, wanted(i))
		})
	}
	wg.Wait()
	return runs
}

// onCluster brings the copies of owner on one cluster in line with wanted.
func (r *Reconciler) onCluster(ctx context.Context, owner string, cl *picchuv1alpha1.Cluster, wanted []*corev1.Secret) clusterRun {
	run := clusterRun{result: ClusterResult{Cluster: cl.Name}}
	rc, problem := r.reach(cl)
	if problem != "" {
		run.result.Problem = problem
		return run
	}
	copies, err := r.copies.get(ctx, client.ObjectKeyFromObject(cl), rc)
	if err != nil {
		run.result.Problem = timedOut(ctx, err, r.ClusterTimeout)
		return run
	}
	live, err := copies.list(ctx)
	if err != nil {
		run.result.Problem = timedOut(ctx, err, r.ClusterTimeout)
		return run
	}
	run.listed = true
	a := Diff(owner, wanted, live)
	w := &writer{client: rc.GetClient(), reader: rc.GetAPIReader(), owner: owner}
	errs := w.apply(ctx, a)
	run.changes = w.changes
	run.result.Conflicts = append(a.Conflicts, w.conflicts...)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = timedOut(ctx, err, r.ClusterTimeout)
		}
		run.result.Problem = strings.Join(msgs, "; ")
	}
	return run
}

// timedOut is err's message, saying so when it is the cluster's deadline.
func timedOut(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return fmt.Sprintf("%v (the cluster's %s were up)", err, timeout)
	}
	return err.Error()
}

// reach returns the registry's client of cl, or why it cannot be used now:
// its Cluster is not Ready, it is not registered yet, or its circuit
// breaker is open (requests would fail at once).
func (r *Reconciler) reach(cl *picchuv1alpha1.Cluster) (cluster.Cluster, string) {
	key := client.ObjectKeyFromObject(cl)
	ready := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		if ready == nil {
			return nil, "not ready"
		}
		return nil, fmt.Sprintf("not ready: %s: %s", ready.Reason, ready.Message)
	}
	rc, ok := r.Registry.Get(key)
	if !ok {
		return nil, "not connected yet"
	}
	if h, ok := r.Registry.Health(key); ok && h.State != breaker.Closed {
		return nil, fmt.Sprintf("circuit breaker %s; last error: %s", h.State, h.LastError)
	}
	return rc, ""
}
