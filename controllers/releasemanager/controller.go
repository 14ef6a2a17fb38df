package releasemanager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/schedule"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/nodes"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/shard"
)

// Reconciler releases one app in one target to every cluster
// of the target's fleet. Each run takes a snapshot (the app's Revisions, the
// fleet's Clusters and what their caches show), decides each build's next
// state and traffic with the pure functions of package release, plans each
// cluster (a plan.Cluster, purely), carries the plans out on every cluster
// at once, settles each build's step on what the clusters took, and records
// the outcome in the ReleaseManager's status.
type Reconciler struct {
	Client client.Client
	// superseded are the versions this process's writes replaced, which a
	// run must not decide from.
	superseded superseded
	// unwritten are the statuses runs decided and did not write yet,
	// which the next runs decide from.
	unwritten unwritten
	// APIReader asks the API server, not the cache, whether an app has
	// Revisions left before it is removed. Client is used when nil.
	APIReader client.Reader
	Registry  *access.Registry
	// RemoteEvents brings changes of remote ReplicaSets.
	RemoteEvents *RemoteEvents
	// Recorder records events on ReleaseManagers; may be nil.
	Recorder events.EventRecorder
	// Notifier, when set, is told how releases go (package slack).
	Notifier Notifier
	// StuckAfter is how long a release holds, because a cluster or the
	// metrics provider cannot be reached, before Notifier is told it is
	// stuck; 0 never tells.
	StuckAfter time.Duration
	stuck      stuckClocks
	// SyncPeriod is the safety resync: the longest a ReleaseManager goes
	// without a run when nothing happens.
	SyncPeriod time.Duration
	// ClusterTimeout bounds the work on one cluster in one run.
	ClusterTimeout time.Duration
	// Timeouts bound the time builds may spend in a state; any left at 0
	// takes its default.
	Timeouts release.Timeouts
	// Calendar decides release windows; one with humane releases enabled
	// when nil.
	Calendar *schedule.Calendar
	// Services are the operator's settings the fleet's objects refer to.
	Services Services
	// ServiceLevelsNamespace is where Sloth service levels are written on
	// target clusters; empty turns them off.
	ServiceLevelsNamespace string
	// ExternalSecrets is the cache of the delivery cluster's ExternalSecrets
	// (controllers.ExternalSecretsCache); nil when it does not serve them.
	ExternalSecrets cache.Cache
	// externalSecrets reads the delivery cluster's ExternalSecrets; nil
	// when it does not serve them (watchExternalSecrets).
	externalSecrets client.Reader
	// Prometheus and Datadog answer which alerts fire for a build; nil
	// turns Prometheus checks off, and makes builds that ask for Datadog
	// checks hold.
	Prometheus AlertSource
	Datadog    AlertSource
	// ProvenPercent, when above 0, is the peak in the proving target from
	// which alerts no longer judge a build, as in the original; at 0 a
	// build is judged until it is released and watched (release.Judged).
	ProvenPercent int32
	// ScaleDownDelay is how long a build that lost its last route keeps
	// its pods when its target's release.scaleDownDelay is unset
	// (DefaultScaleDownDelay when 0, none when negative).
	ScaleDownDelay time.Duration
	// AlertCheckInterval is how often the alerts of builds being judged
	// are read again (10 s when 0).
	AlertCheckInterval time.Duration
	// RemovalGrace is how long an app no Revision targets any longer stays
	// on its clusters before it is removed (DefaultRemovalGrace when 0); an
	// app one of whose builds still has traffic stays until its
	// ReleaseManager is deleted.
	RemovalGrace time.Duration
	// KeepDone is how many builds of a target that are done with (retired,
	// failed) are kept at most, whatever their ttl
	// (release.DefaultKeepDone when 0).
	KeepDone int
	// MaxConcurrentReconciles is the number of apps released at once.
	MaxConcurrentReconciles int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Images, when set, reads the platforms of builds' images: a build
	// then holds on a cluster with no ready node of a platform its image
	// offers, and its pods require nodes of those platforms.
	Images ImageInspector
	// nodes are the target clusters' node caches, when Images is set or
	// PreflightCapacity.
	nodes *nodes.Cache
	// PreflightCapacity checks, before a build takes traffic on a cluster,
	// that its nodes have room for the build's pods that wait for one: a
	// build holds there until they do. It reads every target cluster's
	// nodes and the pods bound to them, through a cache.
	PreflightCapacity bool
	// ClusterAlerts answers the preflight queries of Clusters (their
	// spec.preflight); a Cluster that declares some holds new builds while
	// it is nil.
	ClusterAlerts SeriesSource
	// Shards, when set, are the apps this replica drives: ReleaseManagers
	// of other apps are left to the replicas holding their shards.
	Shards *shard.Coordinator
	// InstanceID identifies this Picchu on target clusters: it marks what
	// it writes there, and it writes over or deletes only what carries its
	// mark (see applier.Owner).
	InstanceID string
	// ProtectedNamespaces are namespaces no app may be deployed in (see
	// picchuv1alpha1.ProtectedNamespaces): a ReleaseManager of an app whose
	// namespace is one of them touches no cluster.
	ProtectedNamespaces []string
	// AppNamespacePolicy says which namespaces the apps of each delivery
	// namespace may use: a ReleaseManager outside it is Stalled and
	// deploys nothing (its deletion still removes what it deployed).
	AppNamespacePolicy picchuv1alpha1.AppNamespacePolicy

	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterHandle
	// lastRun is when each ReleaseManager last ran, for the interval metric.
	lastRun sync.Map
}

// clusterHandle keeps, per target cluster, the applier.Cluster that remembers
// what was applied, for as long as the registry keeps the same client.
type clusterHandle struct {
	remote cluster.Cluster
	conn   *applier.Cluster
}

// setDefaults fills the settings left at their zero value with their
// defaults.
func (r *Reconciler) setDefaults() error {
	if r.SyncPeriod <= 0 {
		r.SyncPeriod = DefaultSyncPeriod
	}
	if r.ClusterTimeout <= 0 {
		r.ClusterTimeout = 30 * time.Second
	}
	if r.AlertCheckInterval <= 0 {
		r.AlertCheckInterval = 10 * time.Second
	}
	r.Timeouts = withDefaults(r.Timeouts)
	if r.Calendar == nil {
		cal, err := schedule.New(true)
		if err != nil {
			return fmt.Errorf("setting up the release calendar: %w", err)
		}
		r.Calendar = cal
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.RemovalGrace <= 0 {
		r.RemovalGrace = DefaultRemovalGrace
	}
	if r.KeepDone <= 0 {
		r.KeepDone = release.DefaultKeepDone
	}
	r.ScaleDownDelay = scaleDownDelay(r.ScaleDownDelay)
	return nil
}

// DefaultScaleDownDelay is how long a build that lost its last route keeps
// its pods by default (--scale-down-delay), as Argo Rollouts' default
// scaleDownDelaySeconds: proxies apply a route change seconds after it is
// written.
const DefaultScaleDownDelay = 30 * time.Second

// NoScaleDownDelay is the Reconciler's ScaleDownDelay (and the operator's)
// that removes a build's pods in the run after its last route.
const NoScaleDownDelay time.Duration = -1

// SetupWithManager watches ReleaseManagers, the Revisions, Clusters and
// config of their apps, and remote ReplicaSets.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.setDefaults(); err != nil {
		return err
	}
	r.clusters = map[types.NamespacedName]*clusterHandle{}
	// A cluster's handle, with its memory of what was applied, goes with
	// the registry's client: when its Cluster goes or changes.
	r.Registry.OnForget(r.forgetCluster)
	if r.Images != nil || r.PreflightCapacity {
		r.nodes = nodes.New(ctrl.Log.WithName("nodes"), r.nodesChanged)
		r.Registry.OnForget(r.nodes.Forget)
	}
	if err := controllers.IndexRevisionsByApp(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.ReleaseManager{}, builder.WithPredicates(specChanged())).
		Watches(&picchuv1alpha1.Revision{}, handler.EnqueueRequestsFromMapFunc(releaseManagersOfRevision),
			builder.WithPredicates(specChanged())).
		Watches(&picchuv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfCluster),
			builder.WithPredicates(clusterChanged())).
		Watches(&picchuv1alpha1.FaultInjector{}, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfApp)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfConfig)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfConfig)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles),
			// A run that hangs (a target that accepts connections and never
			// answers past ClusterTimeout, an alert source past its deadline)
			// is cut, so the app is worked on again.
			ReconciliationTimeout: 2*r.ClusterTimeout + time.Minute,
		}).
		Named("releasemanager")
	if r.RemoteEvents != nil {
		b = b.WatchesRawSource(r.RemoteEvents)
	}
	if externalSecrets := r.watchExternalSecrets(); externalSecrets != nil {
		b = b.WatchesRawSource(externalSecrets)
	}
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("release managers", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.ReleaseManagerList{} }, shardKey))
		r.Shards.OnDrop(func(s int) { r.forgetShard(context.Background(), s) })
	}
	return b.Complete(r)
}

// forgetShard drops the release metrics of the apps of a shard this
// replica no longer drives (the replica that does exports them now), and
// what this replica last wrote of their ReleaseManagers: should it drive
// them again, it decides from what the cache shows, the other replica's
// writes included.
func (r *Reconciler) forgetShard(ctx context.Context, s int) {
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := r.Client.List(ctx, rms); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the release managers of a shard given up", "shard", s)
		return
	}
	for i := range rms.Items {
		if shard.Of(shardKey(&rms.Items[i]), r.Shards.Set().Shards()) == s {
			releasemetrics.Forget(rms.Items[i].Spec.App, rms.Items[i].Spec.Target)
			r.lastRun.Delete(client.ObjectKeyFromObject(&rms.Items[i]))
			r.stuck.forget(client.ObjectKeyFromObject(&rms.Items[i]).String())
			r.forget(client.ObjectKeyFromObject(&rms.Items[i]))
		}
	}
}

// forget drops what the process keeps of a ReleaseManager's status
// between runs: it is gone, or this replica no longer drives it.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.superseded.forget(key)
	r.unwritten.forget(key)
}

// shardKey is the shard key of a ReleaseManager: its app's.
func shardKey(obj client.Object) string {
	rm, _ := obj.(*picchuv1alpha1.ReleaseManager)
	if rm == nil {
		return ""
	}
	return shard.AppKey(rm.Namespace, rm.Spec.App)
}

// Services are services outside the app that its objects on the fleet
// send to, as the operator's flags name them.
type Services struct {
	// DevRoutesHost and DevRoutesPort are the service "00_dev-<app>"
	// routes send to on Clusters that enable dev routes; both must be set.
	DevRoutesHost string
	DevRoutesPort int
	// ClusterPrometheus is the address of the in-cluster Prometheus that
	// the KEDA Prometheus trigger of ambient-mesh apps asks.
	ClusterPrometheus string
	// DatadogAgent is where the KEDA datadog triggers of builds reach the
	// Datadog Cluster Agent (its zero value: the agent's defaults).
	DatadogAgent manifests.DatadogClusterAgent
	// ClusterLabel is the Prometheus label that names the cluster a series
	// comes from (--prometheus-cluster-label): no monitoring object of an
	// app may write it (manifests.CheckTenancy).
	ClusterLabel string
}

// specChanged lets through the changes of a ReleaseManager, Revision or
// Cluster that are more than its status (controllers.MetadataOrSpecChanged):
// its annotations too, and its finalizers by their number.
func specChanged() predicate.Predicate {
	return controllers.MetadataOrSpecChanged(controllers.MetadataChanges{Annotations: true, FinalizerCount: true})
}

// clusterChanged passes the changes of a Cluster that a release reads:
// its spec, labels, annotations or deletion (specChanged), and
// its Ready condition. The rest of its status (the health check's latency,
// the breaker's last error) would run every ReleaseManager of its fleet for
// nothing; the breaker itself is read from the registry.
func clusterChanged() predicate.Predicate {
	spec := specChanged()
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if spec.Update(e) {
			return true
		}
		o, okOld := e.ObjectOld.(*picchuv1alpha1.Cluster)
		n, okNew := e.ObjectNew.(*picchuv1alpha1.Cluster)
		if !okOld || !okNew {
			return true
		}
		a := meta.FindStatusCondition(o.Status.Conditions, picchuv1alpha1.ConditionReady)
		b := meta.FindStatusCondition(n.Status.Conditions, picchuv1alpha1.ConditionReady)
		if a == nil || b == nil {
			return a != b
		}
		return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message
	}}
}

// releaseManagersOfRevision maps a Revision to the ReleaseManager of each of its targets.
func releaseManagersOfRevision(_ context.Context, obj client.Object) []reconcile.Request {
	rev, ok := obj.(*picchuv1alpha1.Revision)
	if !ok {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(rev.Spec.Targets))
	for _, t := range rev.Spec.Targets {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{
			Namespace: rev.Namespace, Name: picchuv1alpha1.ReleaseManagerName(rev.Spec.App.Name, t.Name),
		}})
	}
	return reqs
}

// releaseManagersOfCluster maps a Cluster to the ReleaseManagers of its fleet.
func (r *Reconciler) releaseManagersOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	fleet := obj.GetLabels()[picchuv1alpha1.LabelFleet]
	if fleet == "" {
		return nil
	}
	return r.listReleaseManagers(ctx, obj.GetNamespace(), client.MatchingLabels{picchuv1alpha1.LabelFleet: fleet})
}

// releaseManagersOfApp maps an object labelled with an app (a FaultInjector) to its ReleaseManagers.
func (r *Reconciler) releaseManagersOfApp(ctx context.Context, obj client.Object) []reconcile.Request {
	app := obj.GetLabels()[picchuv1alpha1.LabelApp]
	if app == "" {
		return nil
	}
	return r.listReleaseManagers(ctx, obj.GetNamespace(), client.MatchingLabels{picchuv1alpha1.LabelApp: app})
}

// releaseManagersOfConfig maps a ConfigMap, Secret or ExternalSecret to the
// ReleaseManagers of the Revisions whose configSelector selects it.
func (r *Reconciler) releaseManagersOfConfig(ctx context.Context, obj client.Object) []reconcile.Request {
	if len(obj.GetLabels()) == 0 {
		return nil
	}
	revs := &picchuv1alpha1.RevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing revisions for a config change", "object", client.ObjectKeyFromObject(obj))
		return nil
	}
	var reqs []reconcile.Request
	for i := range revs.Items {
		rev := &revs.Items[i]
		for _, t := range rev.Spec.Targets {
			if sel, err := t.ConfigLabels(); err == nil && sel != nil && sel.Matches(labelsOf(obj)) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{
					Namespace: rev.Namespace, Name: picchuv1alpha1.ReleaseManagerName(rev.Spec.App.Name, t.Name),
				}})
			}
		}
	}
	return reqs
}

func (r *Reconciler) listReleaseManagers(ctx context.Context, namespace string, sel client.MatchingLabels) []reconcile.Request {
	return controllers.Requests(ctx, r.Client, &picchuv1alpha1.ReleaseManagerList{}, "release managers",
		[]any{"namespace", namespace, "labels", sel}, client.InNamespace(namespace), sel)
}

// Reconcile runs one release step for one app in one target.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	prologue := controllers.Prologue{What: "release manager", ShardKey: shardKey, Gone: r.forget}
	run, err := prologue.Begin(ctx, r.Client, r.Shards, req, rm)
	if run == nil {
		return ctrl.Result{}, err
	}
	defer run.Done()
	// The run stops, its writes unsent, once this replica no longer
	// holds the app's shard.
	ctx = run.Ctx
	// Until the cache has this process's last write, decide from what the
	// write returned.
	rm = r.superseded.current(req.NamespacedName, rm)
	if picchuv1alpha1.Ignored(rm.Labels) {
		return ctrl.Result{}, nil
	}
	// A ReleaseManager being deleted is finalized even when some stored
	// value does not decode: nothing else would ever let it go.
	if !rm.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, rm)
	}
	if err := rm.DecodeError(); err != nil {
		return ctrl.Result{}, controllers.ReportUndecodable(ctx, r.Client, r.Recorder, "ReleaseManager", rm, &rm.Status.Conditions, err)
	}
	if reason, err := picchuv1alpha1.NamespaceRefused(rm.Namespace, rm.Spec.App, rm.Spec.Target, r.ProtectedNamespaces, r.AppNamespacePolicy); err != nil {
		// The Revision controller creates none such; one made by hand, or
		// before the namespace was protected, touches no cluster.
		return ctrl.Result{}, controllers.ReportStalled(ctx, r.Client, r.Recorder, rm, &rm.Status.Conditions, reason, err.Error())
	}
	if controllerutil.AddFinalizer(rm, picchuv1alpha1.FinalizerReleaseManager) {
		if err := r.write(rm, func() error { return r.Client.Update(ctx, rm) }); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer to release manager %s: %w", req.NamespacedName, err)
		}
	}
	return r.release(ctx, rm)
}

// release runs one release step for the app of rm: it observes (snapshot),
// checks the builds before flight and judges them, decides, plans every
// cluster, acts on the fleet, settles what the clusters took, and records
// the outcome, then collects the app's garbage.
func (r *Reconciler) release(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(rm)
	// A status a run did not write yet is decided from, as written.
	cached := rm
	rm, pending := r.unwritten.current(key, rm)
	snap, err := r.snapshot(ctx, rm)
	if err != nil {
		return ctrl.Result{}, err
	}
	snap.pending = pending
	if pending != nil && pending.status != nil {
		// current decided from a copy: the cached status is as written.
		snap.written = &cached.Status
	}
	if !snap.hasRevisions() {
		if res, done, err := r.orphaned(ctx, snap); done {
			return res, err
		}
	}
	if prev, ok := r.lastRun.Swap(key, snap.now); ok {
		releasemetrics.ObserveReconcileInterval(rm.Spec.App, rm.Spec.Target, snap.now.Sub(prev.(time.Time)))
	}
	r.markUnjudgeable(snap)
	// Pre-flight checks first: a deploy that finishes is judged only
	// when nothing holds it deployed (snapshot.passesToJudged).
	r.checkPreflight(ctx, snap)
	r.judge(ctx, snap)
	snap.decide(r.Timeouts, r.Calendar)
	acted := r.act(ctx, snap.fleet, plans(snap))
	res, err := r.record(ctx, snap, settle(snap, acted))
	if err != nil {
		return res, err
	}
	res = r.collectGarbageOf(ctx, snap, res)
	res.RequeueAfter = fromStart(res.RequeueAfter, snap.now, r.Now())
	return res, nil
}

// fromStart is wait, decided from a run's start (start), counted from the
// run's end (end) instead, as the work queue counts it: a step due at a
// time runs then, not a run's length later (a run under load lasts a
// second and more). It is at least again; 0, no wait asked, stays 0.
func fromStart(wait time.Duration, start, end time.Time) time.Duration {
	if wait <= 0 {
		return wait
	}
	return max(wait-end.Sub(start), again)
}

// orphaned handles an app no Revision targets in the target any longer,
// and says whether the run is done: while the API server still has one (the
// cache may lag behind a Revision just created), or once the app is
// removed. Otherwise its builds leave as builds without a Revision do, and
// the one serving keeps its traffic: the status says so.
func (r *Reconciler) orphaned(ctx context.Context, snap *snapshot) (ctrl.Result, bool, error) {
	rm := snap.rm
	key := client.ObjectKeyFromObject(rm)
	if left, err := r.revisionsLeft(ctx, rm); err != nil || left {
		// The Revision's watch event comes once the cache has it.
		return ctrl.Result{RequeueAfter: time.Second}, true, err
	}
	snap.orphanedSince = orphanedSince(rm, snap.now)
	snap.removal = release.RemoveOrphan(snap.orphanedSince, snap.now, r.RemovalGrace, snap.hasTraffic())
	if !snap.removal.Remove {
		return ctrl.Result{}, false, nil
	}
	// The finalizer removes its namespace, and everything in it, from the
	// fleet.
	if err := r.Client.Delete(ctx, rm); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, true, fmt.Errorf("deleting release manager %s with no revisions left: %w", key, err)
	}
	r.lastRun.Delete(key)
	r.stuck.forget(key.String())
	releasemetrics.Forget(rm.Spec.App, rm.Spec.Target)
	return ctrl.Result{}, true, nil
}

// collectGarbageOf collects the app's garbage after a run whose result is
// res. An error would replace the run's due time (its next step, a
// deadline) with the controller's backoff, which grows to minutes while
// the error lasts: the release must not wait on garbage. The collection is
// tried again at the next run, which comes at the latest after gcRetry.
// Otherwise the next run comes at the latest when a build expires that
// would then be collected: nothing else may happen to a quiet app.
func (r *Reconciler) collectGarbageOf(ctx context.Context, snap *snapshot, res ctrl.Result) ctrl.Result {
	next, err := r.collectGarbage(ctx, snap)
	if err == nil {
		if wait := next.Sub(snap.now); !next.IsZero() && (res.RequeueAfter <= 0 || wait < res.RequeueAfter) {
			res.RequeueAfter = wait
		}
		return res
	}
	ctrl.LoggerFrom(ctx).Error(err, "collecting garbage; the release goes on")
	if r.Recorder != nil {
		r.Recorder.Eventf(snap.rm, nil, corev1.EventTypeWarning, "GarbageCollectionFailed", "CollectGarbage", "%v", err)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > gcRetry {
		res.RequeueAfter = gcRetry
	}
	return res
}

// gcRetry is the longest a failed garbage collection waits to be tried again.
const gcRetry = time.Minute

// write writes rm with update, an Update of it or of its status, and
// records the version the write replaced.
func (r *Reconciler) write(rm *picchuv1alpha1.ReleaseManager, update func() error) error {
	before := rm.ResourceVersion
	if err := update(); err != nil {
		return err
	}
	r.superseded.wrote(client.ObjectKeyFromObject(rm), before, rm)
	return nil
}

// uncached reads from the API server, or from the cache without an APIReader.
func (r *Reconciler) uncached() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// DefaultSyncPeriod is the default SyncPeriod.
const DefaultSyncPeriod = 15 * time.Minute

// DefaultRemovalGrace is the default RemovalGrace: longer than any GitOps
// tool takes between deleting a Revision and creating it again.
const DefaultRemovalGrace = 5 * time.Minute

// orphanedSince is when the ReleaseManager's app lost its last Revision:
// the transition time of its Orphaned condition, or now when it is not set.
func orphanedSince(rm *picchuv1alpha1.ReleaseManager, now time.Time) time.Time {
	if c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionOrphaned); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return now
}

// revisionsLeft asks the API server whether any Revision of the app still
// targets the ReleaseManager's target.
func (r *Reconciler) revisionsLeft(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) (bool, error) {
	revs := &picchuv1alpha1.RevisionList{}
	if err := r.uncached().List(ctx, revs, client.InNamespace(rm.Namespace), controllers.OfApp(rm.Spec.App)); err != nil {
		return false, fmt.Errorf("listing revisions of app %s: %w", rm.Spec.App, err)
	}
	for i := range revs.Items {
		if revs.Items[i].DeletionTimestamp.IsZero() && targetOf(&revs.Items[i], rm.Spec.Target) != nil {
			return true, nil
		}
	}
	return false, nil
}

// finalize deletes the app's namespace and service levels from every
// cluster of the fleet, then lets the ReleaseManager go. An enabled cluster
// that cannot be reached holds the finalizer until it can.
func (r *Reconciler) finalize(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(rm, picchuv1alpha1.FinalizerReleaseManager) {
		return ctrl.Result{}, nil
	}
	if why := r.leaveClustersAlone(rm); why != "" {
		controllerutil.RemoveFinalizer(rm, picchuv1alpha1.FinalizerReleaseManager)
		if err := r.Client.Update(ctx, rm); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("removing finalizer of release manager %s/%s: %w", rm.Namespace, rm.Name, err)
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(rm, nil, corev1.EventTypeWarning, "ClustersLeftAlone", "Finalize", "%s", why)
		}
		return ctrl.Result{}, nil
	}
	fleet, err := r.fleet(ctx, rm)
	if err != nil {
		return ctrl.Result{}, err
	}
	var usable []*applier.Cluster
	for _, fc := range fleet {
		if fc.conn == nil {
			return ctrl.Result{}, fmt.Errorf("removing app %s from cluster %s: %s", rm.Spec.App, fc.obj.Name, fc.problem)
		}
		usable = append(usable, fc.conn)
	}
	ns := appNamespace(rm)
	var mu sync.Mutex
	var left []string
	results := applier.ApplyFleet(ctx, usable, applier.Func(func(ctx context.Context, c *applier.Cluster) error {
		if r.ServiceLevelsNamespace != "" {
			// The service levels live outside the app's namespace.
			if err := c.Delete(ctx, serviceLevelsOf(rm.Spec.App, rm.Spec.Target, r.ServiceLevelsNamespace)); err != nil {
				return err
			}
		}
		vacated, err := c.RemoveNamespace(ctx, ns, ns.Labels)
		if err == nil && vacated.Left() {
			mu.Lock()
			left = append(left, fmt.Sprintf("on cluster %s, %s", c.Name(), vacated))
			mu.Unlock()
		}
		return err
	}), r.ClusterTimeout)
	if err := results.Err(); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing app %s from its clusters: %w", rm.Spec.App, err)
	}
	if len(left) > 0 && r.Recorder != nil {
		// One event, once every cluster is done: the recorder folds events
		// of one object and reason into a series that keeps the first note.
		slices.Sort(left)
		r.Recorder.Eventf(rm, nil, corev1.EventTypeWarning, "NamespaceLeft", "Finalize",
			"namespace %s was left, without Picchu's objects: %s", ns.Name, strings.Join(left, "; "))
	}
	controllerutil.RemoveFinalizer(rm, picchuv1alpha1.FinalizerReleaseManager)
	if err := r.Client.Update(ctx, rm); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("removing finalizer of release manager %s/%s: %w", rm.Namespace, rm.Name, err)
	}
	return ctrl.Result{}, nil
}

// leaveClustersAlone says why the ReleaseManager's app must not be removed
// from its clusters when it goes, or "": its namespace is protected (it was
// never Picchu's, whatever its labels say), or its spec did not decode, so
// that which app it is cannot be told.
func (r *Reconciler) leaveClustersAlone(rm *picchuv1alpha1.ReleaseManager) string {
	if err := rm.DecodeError(); err != nil && rm.Spec.App == "" {
		return fmt.Sprintf("not removing the app from its clusters: %v", err)
	}
	if err := picchuv1alpha1.CheckProtected(rm.Spec.App, rm.Spec.Target, r.ProtectedNamespaces); err != nil {
		return fmt.Sprintf("not removing the app from its clusters: %v", err)
	}
	return ""
}

// handle returns the applier.Cluster for the registry's current client of a
// cluster, keeping it while the client stays the same.
func (r *Reconciler) handle(cl *picchuv1alpha1.Cluster, remoteCluster cluster.Cluster) *applier.Cluster {
	key := client.ObjectKeyFromObject(cl)
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.clusters[key]; ok && h.remote == remoteCluster {
		return h.conn
	}
	conn := applier.NewCluster(cl.DeepCopy(), remoteCluster.GetClient(), remoteCluster.GetAPIReader(), r.InstanceID, ctrl.Log.WithName("plan"))
	conn.Informers = remoteCluster.GetCache()
	// The cluster's own HTTP client: its connections, rate limits and
	// circuit breaker.
	if d, err := discovery.NewDiscoveryClientForConfigAndClient(remoteCluster.GetConfig(), remoteCluster.GetHTTPClient()); err == nil {
		conn.Discovery = d
	} else {
		ctrl.Log.Error(err, "building a discovery client: the app's namespace will not be removed there", "cluster", key.String())
	}
	h := &clusterHandle{remote: remoteCluster, conn: conn}
	r.clusters[key] = h
	return h.conn
}

// forgetCluster drops the handle of the cluster key.
func (r *Reconciler) forgetCluster(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clusters, key)
}

// withDefaults fills the timeouts left at 0 with the defaults.
func withDefaults(t release.Timeouts) release.Timeouts {
	d := release.DefaultTimeouts
	if t.Created <= 0 {
		t.Created = d.Created
	}
	if t.Deploying <= 0 {
		t.Deploying = d.Deploying
	}
	if t.Testing <= 0 {
		t.Testing = d.Testing
	}
	return t
}
