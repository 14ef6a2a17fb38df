package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/shard"
)

// Reconciler keeps a client and cache per enabled Cluster in the
// Registry, rebuilt when the Cluster or its Secret changes, and reports in
// the Cluster's status whether its API server answers.
type Reconciler struct {
	Client   client.Client
	Registry *access.Registry
	// HealthPeriod is how often a cluster's API server is asked for its version.
	HealthPeriod time.Duration
	// HealthTimeout bounds that request.
	HealthTimeout time.Duration
	// Shards, when set, say which replica writes a Cluster's finalizer and
	// status: the one holding its shard. Every replica connects to every
	// Cluster, as each drives apps in all of them.
	Shards *shard.Coordinator
	// Now is the clock freeze windows are read with (time.Now when nil).
	Now func() time.Time
}

// SetupWithManager watches Clusters and the Secrets that hold their credentials.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.Cluster{}).
		// A Cluster's credentials are in the Secret of the same name.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, s client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: s.GetNamespace(), Name: s.GetName()}}}
		})).
		Named("cluster").
		// Every run has a deadline: the health check's, and a minute for
		// the delivery cluster's reads and writes.
		WithOptions(controller.Options{ReconciliationTimeout: r.HealthTimeout + time.Minute})
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("clusters", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.ClusterList{} }, shardKey))
	}
	return b.Complete(r)
}

// shardKey is the shard key of a Cluster.
func shardKey(obj client.Object) string { return shard.ClusterKey(obj.GetNamespace(), obj.GetName()) }

// Reconcile registers, re-registers or removes one Cluster and checks its health.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cl := &picchuv1alpha1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cl); err != nil {
		if apierrors.IsNotFound(err) {
			r.Registry.Remove(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading cluster %s: %w", req.NamespacedName, err)
	}
	// Every replica connects every Cluster; the holder of its shard
	// writes it, with writeCtx, which ends once it no longer holds it.
	writeCtx, done, writes := r.Shards.Set().Begin(ctx, shardKey(cl))
	if writes {
		defer done()
	}
	if !cl.DeletionTimestamp.IsZero() {
		r.Registry.Remove(req.NamespacedName)
		if !writes {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.setFinalizer(writeCtx, cl, false)
	}
	if writes && !controllerutil.ContainsFinalizer(cl, picchuv1alpha1.FinalizerCluster) {
		// The update's watch event brings the next run.
		return ctrl.Result{}, r.setFinalizer(writeCtx, cl, true)
	}

	before := cl.DeepCopy()
	result := r.connect(ctx, cl)
	cl.Status.ObservedGeneration = cl.Generation
	result = r.freeze(cl, result)
	if !writes || equality.Semantic.DeepEqual(before.Status, cl.Status) {
		return result, nil
	}
	if err := r.Client.Status().Patch(writeCtx, cl, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status of cluster %s: %w", req.NamespacedName, err)
	}
	return result, nil
}

// freeze records in the Cluster's status the freeze window open now, and
// asks to run again when it closes or the next one opens, if that is
// sooner than result says.
func (r *Reconciler) freeze(cl *picchuv1alpha1.Cluster, result ctrl.Result) ctrl.Result {
	now := r.now()
	f := schedule.Frozen(cl.Spec.Freezes, now)
	cl.Status.Frozen = f.String()
	if due := f.Due(); !due.IsZero() {
		if wait := max(due.Sub(now), time.Second); result.RequeueAfter == 0 || wait < result.RequeueAfter {
			result.RequeueAfter = wait
		}
	}
	return result
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// connect brings the registry in line with the Cluster and records the
// outcome in its status.
func (r *Reconciler) connect(ctx context.Context, cl *picchuv1alpha1.Cluster) ctrl.Result {
	key := client.ObjectKeyFromObject(cl)
	cl.Status.PlainHTTP = cl.Spec.Enabled && access.PlainHTTP(cl)
	if !cl.Spec.Enabled {
		r.Registry.Remove(key)
		cl.Status.Health = nil // no client, no breaker
		setReady(cl, metav1.ConditionFalse, picchuv1alpha1.ReasonDisabled, "spec.enabled is false", false)
		return ctrl.Result{}
	}
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, key, secret); err != nil {
		r.Registry.Remove(key)
		cl.Status.Health = nil
		msg := fmt.Sprintf("reading secret %s: %v", key, err)
		setReady(cl, metav1.ConditionFalse, picchuv1alpha1.ReasonInvalidCredentials, msg, true)
		// A missing Secret's creation brings us back; other errors retry.
		return ctrl.Result{RequeueAfter: r.HealthPeriod}
	}
	if _, err := r.Registry.Ensure(ctx, cl, secret); err != nil {
		r.Registry.Remove(key)
		cl.Status.Health = nil
		setReady(cl, metav1.ConditionFalse, picchuv1alpha1.ReasonInvalidCredentials, err.Error(), true)
		return ctrl.Result{} // only a change to the Cluster or Secret can help
	}
	version, latency, err := r.Registry.ServerVersion(key, r.HealthTimeout)
	health, _ := r.Registry.Health(key)
	setHealth(cl, health, latency, err == nil)
	if err != nil {
		if health.State != breaker.Closed {
			msg := fmt.Sprintf("circuit breaker %s since %s; last error: %s", health.State, health.Since.UTC().Format(time.RFC3339), health.LastError)
			setReady(cl, metav1.ConditionFalse, picchuv1alpha1.ReasonCircuitOpen, msg, true)
		} else {
			setReady(cl, metav1.ConditionFalse, picchuv1alpha1.ReasonUnreachable, err.Error(), false)
		}
		return ctrl.Result{RequeueAfter: nextCheck(health, r.HealthPeriod, time.Now())}
	}
	cl.Status.Kubernetes.Version = version
	msg := "Kubernetes " + version
	if cl.Status.PlainHTTP {
		msg += ", over plain HTTP without TLS or credentials (spec.config.allowPlainHTTP)"
	}
	setReady(cl, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected, msg, false)
	return ctrl.Result{RequeueAfter: r.HealthPeriod}
}

// failedCheckRetry is how soon a failed health check is made again while
// the cluster's breaker is still closed: a run of failures opens it within
// seconds, not health periods.
const failedCheckRetry = time.Second

// nextCheck is how soon to check a cluster again after a failed check:
// failedCheckRetry while its breaker is closed and counting failures, else when the breaker lets
// its next probe through, so that a cluster that is back is seen back
// within the breaker's backoff; never later than period.
func nextCheck(h breaker.Snapshot, period time.Duration, now time.Time) time.Duration {
	switch {
	case h.State == breaker.Closed && h.ConsecutiveFailures == 0:
		// The API server answered, with an error (bad credentials, say):
		// checking sooner would not change its answer.
		return period
	case h.State == breaker.Closed || h.RetryAt.IsZero():
		return min(period, failedCheckRetry)
	}
	return min(period, max(h.RetryAt.Sub(now), 10*time.Millisecond))
}

// setHealth records the cluster's breaker in status.health. The latency of
// a check that got an answer is written only when it moved by more than
// half from the one recorded, so a healthy cluster's status stays the same
// from one check to the next.
func setHealth(cl *picchuv1alpha1.Cluster, h breaker.Snapshot, latency time.Duration, answered bool) {
	st := &picchuv1alpha1.ClusterHealthStatus{Breaker: h.State.String(), LastError: h.LastError}
	// Times to the second, as they are stored: a status read back from
	// the API server then equals the one a check computes, and an
	// unchanged cluster is not written.
	if !h.Since.IsZero() {
		since := metav1.NewTime(h.Since.Truncate(time.Second))
		st.Since = &since
	}
	if h.State != breaker.Closed && !h.RetryAt.IsZero() {
		retry := metav1.NewTime(h.RetryAt.Truncate(time.Second))
		st.RetryAt = &retry
	}
	var recorded *metav1.Duration
	if cl.Status.Health != nil {
		recorded = cl.Status.Health.Latency
	}
	st.Latency = recorded
	if answered && (recorded == nil || latencyMoved(recorded.Duration, latency)) {
		st.Latency = &metav1.Duration{Duration: latency}
	}
	cl.Status.Health = st
}

// latencyFloor is the least change of a health check's latency that is
// written: a few milliseconds' jitter doubles a fast cluster's latency at
// every check, and each write runs the fleet's ReleaseManagers.
const latencyFloor = 100 * time.Millisecond

// latencyMoved says a health check's latency moved far enough from the
// recorded one to be written: it doubled or halved, by latencyFloor at least.
func latencyMoved(recorded, latency time.Duration) bool {
	return (latency > 2*recorded || 2*latency < recorded) && (latency-recorded >= latencyFloor || recorded-latency >= latencyFloor)
}

// setReady sets the Ready and Stalled conditions and status.kubernetes.ready.
func setReady(cl *picchuv1alpha1.Cluster, status metav1.ConditionStatus, reason, message string, stalled bool) {
	cl.Status.Kubernetes.Ready = status == metav1.ConditionTrue
	meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{
		Type: picchuv1alpha1.ConditionReady, Status: status, Reason: reason, Message: message,
		ObservedGeneration: cl.Generation,
	})
	if stalled {
		meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: reason, Message: message,
			ObservedGeneration: cl.Generation,
		})
	} else {
		meta.RemoveStatusCondition(&cl.Status.Conditions, picchuv1alpha1.ConditionStalled)
	}
}

func (r *Reconciler) setFinalizer(ctx context.Context, cl *picchuv1alpha1.Cluster, present bool) error {
	before := cl.DeepCopy()
	var changed bool
	if present {
		changed = controllerutil.AddFinalizer(cl, picchuv1alpha1.FinalizerCluster)
	} else {
		changed = controllerutil.RemoveFinalizer(cl, picchuv1alpha1.FinalizerCluster)
	}
	if !changed {
		return nil
	}
	if err := r.Client.Patch(ctx, cl, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating finalizer of cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	return nil
}
