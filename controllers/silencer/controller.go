// Package silencer holds the Alertmanager silences of releases: on every
// change of a ReleaseManager's builds it decides, with package silence,
// which silences the app holds in the target, and creates, extends and
// expires them in Alertmanager. It only reads the delivery cluster (from
// the manager's cache) and writes only to Alertmanager.
//
// Silences are best effort: a failure never holds a release. It is logged,
// counted in picchu_alert_silences_total{outcome="failed"}, and tried again
// with backoff.
//
// In steady state it sends nothing: it remembers the silences it holds per
// app and target, asks Alertmanager for them once after it starts (for an
// app and target whose Revisions configure releaseSilences), and otherwise
// only when something is to be created, extended or expired, just before
// doing it. A silence left behind by an operator that stopped, for a
// Revision that no longer configures it, ends on its own at its end time
// (at most the expected rest of the release and two margins, and never
// more than MaxLength after it was last written).
//
// Several Picchus may share one Alertmanager: each changes and expires
// only the silences whose marker names its Instance.
package silencer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/decide/silence"
	"github.com/medium/picchu/integrations/alertmanager"
	"github.com/medium/picchu/shard"
)

// Alertmanager is what the Reconciler asks of Alertmanager
// (*alertmanager.Client).
type Alertmanager interface {
	List(ctx context.Context, filters ...string) ([]alertmanager.Silence, error)
	Post(ctx context.Context, s alertmanager.Silence) (string, error)
	Expire(ctx context.Context, id string) error
}

// Backoff bounds of a failed run's retries.
const (
	minRetry = 5 * time.Second
	maxRetry = 5 * time.Minute
)

// Reconciler holds the silences of the releases of each ReleaseManager's
// app and target.
type Reconciler struct {
	// Client reads ReleaseManagers and Revisions from the manager's cache.
	Client client.Client
	// Alertmanager is where the silences are.
	Alertmanager Alertmanager
	// Margin is silence.DefaultMargin when 0.
	Margin time.Duration
	// MaxLength bounds how far ahead a silence ends (--max-silence;
	// silence.DefaultMaxLength when 0): a longer release's is renewed.
	MaxLength time.Duration
	// Instance names this Picchu among others sharing the Alertmanager
	// (--instance-id): it changes and expires only silences whose marker
	// names it, and adopts those whose marker names none (silence.Owns).
	// Empty, it holds only those.
	Instance string
	// ClusterLabel is the label that names the cluster an alert comes
	// from (--prometheus-cluster-label): each silence is kept to the
	// alerts of its target fleet's clusters, and of none (silence.Fleet).
	// Empty, silences are not scoped by cluster.
	ClusterLabel string
	// Shards, when set, say which replica holds the silences of an app.
	Shards *shard.Coordinator
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	records map[types.NamespacedName]*record
}

// record is what the Reconciler knows of the silences of one app in one
// target (one ReleaseManager).
type record struct {
	namespace, app, target string
	// synced says Alertmanager was asked for them since the start.
	synced bool
	// silences are those it holds (not expired), as last written or listed.
	silences []silence.Silence
	// failures counts the runs that failed in a row.
	failures int
}

// SetupWithManager watches ReleaseManagers whose builds change (state,
// traffic, wave), the Revisions of their apps, and the Clusters of their
// fleets as they join, leave or rename themselves on the alerts.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.records = map[types.NamespacedName]*record{}
	if err := controllers.IndexRevisionsByApp(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.ReleaseManager{}, builder.WithPredicates(buildsChanged())).
		Watches(&picchuv1alpha1.Revision{}, handler.EnqueueRequestsFromMapFunc(releaseManagersOfRevision),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&picchuv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfCluster),
			builder.WithPredicates(fleetChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2, ReconciliationTimeout: 2 * time.Minute}).
		Named("silences")
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("silences", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.ReleaseManagerList{} }, shardKey))
		r.Shards.OnDrop(r.forgetShard)
	}
	return b.Complete(r)
}

// shardKey is the shard key of a ReleaseManager: its app's, as the
// ReleaseManager controller's.
func shardKey(obj client.Object) string {
	rm, _ := obj.(*picchuv1alpha1.ReleaseManager)
	if rm == nil {
		return ""
	}
	return shard.AppKey(rm.Namespace, rm.Spec.App)
}

// forgetShard drops what this replica knows of the silences of the apps
// of a shard another replica now drives: should it drive them again, it
// asks Alertmanager first.
func (r *Reconciler) forgetShard(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, rec := range r.records {
		if shard.Of(shard.AppKey(rec.namespace, rec.app), r.Shards.Set().Shards()) == s {
			delete(r.records, key)
		}
	}
}

// buildsChanged lets through creations, deletions, and updates that change
// a build's tag, state, traffic or wave.
func buildsChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*picchuv1alpha1.ReleaseManager)
		n, ok2 := e.ObjectNew.(*picchuv1alpha1.ReleaseManager)
		if !ok1 || !ok2 {
			return true
		}
		return !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
			!slices.EqualFunc(o.Status.Revisions, n.Status.Revisions, func(a, b picchuv1alpha1.ReleaseManagerRevisionStatus) bool {
				return a.Tag == b.Tag && a.State.Current == b.State.Current && a.CurrentPercent == b.CurrentPercent &&
					a.Wave == b.Wave && slices.Equal(a.WavePercents, b.WavePercents)
			})
	}}
}

// fleetChanged lets through Clusters created and deleted, and updates
// that move one between fleets or change its value of the cluster label.
func fleetChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*picchuv1alpha1.Cluster)
		n, ok2 := e.ObjectNew.(*picchuv1alpha1.Cluster)
		if !ok1 || !ok2 {
			return true
		}
		return o.Labels[picchuv1alpha1.LabelFleet] != n.Labels[picchuv1alpha1.LabelFleet] ||
			o.PrometheusClusterLabelValue() != n.PrometheusClusterLabelValue()
	}}
}

// releaseManagersOfCluster maps a Cluster to the ReleaseManagers of its
// fleet (of an update, the old object's and the new one's, so a Cluster
// that moves fleets is heard by both).
func (r *Reconciler) releaseManagersOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	fleet := obj.GetLabels()[picchuv1alpha1.LabelFleet]
	if fleet == "" {
		return nil
	}
	return controllers.Requests(ctx, r.Client, &picchuv1alpha1.ReleaseManagerList{}, "the release managers of a fleet for a cluster's change",
		[]any{"cluster", client.ObjectKeyFromObject(obj)}, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{picchuv1alpha1.LabelFleet: fleet})
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

// Reconcile brings the silences of one ReleaseManager's app and target in
// line with its builds. Alertmanager's failures are no error: they are
// logged and counted, and the run is tried again with backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rm := &picchuv1alpha1.ReleaseManager{}
	var goneResult ctrl.Result
	gone := func(key types.NamespacedName) { goneResult = r.gone(ctx, key) }
	run, err := controllers.Prologue{What: "release manager", ShardKey: shardKey, Gone: gone}.Begin(ctx, r.Client, r.Shards, req, rm)
	if run == nil {
		return goneResult, err
	}
	defer run.Done()
	// The run stops, its writes unsent, once this replica no longer
	// holds the app's shard.
	ctx = run.Ctx
	in, configured, err := r.input(ctx, rm)
	if err != nil {
		return ctrl.Result{}, err
	}
	rec := r.record(req.NamespacedName, rm)
	// One run at a time per ReleaseManager: the workqueue never hands the
	// same key to two workers.
	result, err := r.sync(ctx, rec, in, configured)
	if err != nil {
		rec.failures++
		retry := min(minRetry<<min(rec.failures-1, 10), maxRetry)
		count(outcomeFailed)
		ctrl.LoggerFrom(ctx).Error(err, "holding the release silences failed; the release goes on, trying again", "after", retry)
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	rec.failures = 0
	return result, nil
}

// gone expires the silences held for a ReleaseManager that was deleted.
func (r *Reconciler) gone(ctx context.Context, key types.NamespacedName) ctrl.Result {
	r.mu.Lock()
	rec := r.records[key]
	r.mu.Unlock()
	if rec == nil {
		return ctrl.Result{}
	}
	if len(rec.silences) > 0 {
		in := r.newInput(rec.namespace, rec.app, rec.target)
		if _, err := r.sync(ctx, rec, in, false); err != nil {
			count(outcomeFailed)
			ctrl.LoggerFrom(ctx).Error(err, "expiring the silences of a deleted release manager; they end on their own")
		}
	}
	r.mu.Lock()
	delete(r.records, key)
	r.mu.Unlock()
	return ctrl.Result{}
}

func (r *Reconciler) record(key types.NamespacedName, rm *picchuv1alpha1.ReleaseManager) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.records[key]
	if rec == nil {
		rec = &record{namespace: rm.Namespace, app: rm.Spec.App, target: rm.Spec.Target}
		r.records[key] = rec
	}
	return rec
}

// input reads what the silences of rm's app and target are decided from,
// and whether any of its Revisions configures silences in the target.
func (r *Reconciler) input(ctx context.Context, rm *picchuv1alpha1.ReleaseManager) (silence.Input, bool, error) {
	in := r.newInput(rm.Namespace, rm.Spec.App, rm.Spec.Target)
	if !rm.DeletionTimestamp.IsZero() {
		return in, false, nil // the app is being removed: nothing is released
	}
	revs := &picchuv1alpha1.RevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(rm.Namespace), controllers.OfApp(rm.Spec.App)); err != nil {
		return in, false, fmt.Errorf("listing the revisions of %s: %w", rm.Spec.App, err)
	}
	if r.ClusterLabel != "" {
		clusters := &picchuv1alpha1.ClusterList{}
		if err := r.Client.List(ctx, clusters, client.InNamespace(rm.Namespace),
			client.MatchingLabels{picchuv1alpha1.LabelFleet: rm.Spec.Fleet}); err != nil {
			return in, false, fmt.Errorf("listing the clusters of fleet %s: %w", rm.Spec.Fleet, err)
		}
		in.Fleet.Label = r.ClusterLabel
		for i := range clusters.Items {
			in.Fleet.Values = append(in.Fleet.Values, clusters.Items[i].PrometheusClusterLabelValue())
		}
	}
	targets := map[string]*picchuv1alpha1.RevisionTarget{}
	configured := false
	for i := range revs.Items {
		rev := &revs.Items[i]
		for j := range rev.Spec.Targets {
			if t := &rev.Spec.Targets[j]; t.Name == rm.Spec.Target {
				targets[rev.Spec.App.Tag] = t
				configured = configured || len(t.ReleaseSilences) > 0
			}
		}
	}
	for _, st := range rm.Status.Revisions {
		b := silence.Build{Tag: st.Tag, State: release.State(st.State.Current), Percent: st.CurrentPercent}
		if t := targets[st.Tag]; t != nil && !st.Deleted {
			percent := st.CurrentPercent
			if w := int(st.Wave); w >= 0 && w < len(st.WavePercents) {
				percent = st.WavePercents[w]
			}
			b.Remaining = silence.Remaining(t.Release, percent, int(st.Wave))
			b.Silences = t.ReleaseSilences
		}
		in.Builds = append(in.Builds, b)
	}
	return in, configured, nil
}

// newInput is the input of a decision about the silences of app in target
// now, with the Reconciler's settings.
func (r *Reconciler) newInput(namespace, app, target string) silence.Input {
	return silence.Input{Now: r.Now(), Namespace: namespace, App: app, Target: target,
		Instance: r.Instance, Margin: r.Margin, MaxLength: r.MaxLength}
}

// sync decides the silences of rec's app and target, asking Alertmanager
// first once after the start when configured, and again before acting on
// what the record alone says, and acts.
func (r *Reconciler) sync(ctx context.Context, rec *record, in silence.Input, configured bool) (ctrl.Result, error) {
	plan, err := r.decide(ctx, rec, in, configured)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.apply(ctx, rec, plan); err != nil {
		rec.synced = false // ask Alertmanager what holds before trying again
		return ctrl.Result{}, err
	}
	if plan.Recheck.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(plan.Recheck.Sub(in.Now), time.Second)}, nil
}

// decide decides the silences of rec's app and target from what rec
// holds, refreshed from Alertmanager first once after the start when
// configured, and before a plan that would act on what rec alone says.
func (r *Reconciler) decide(ctx context.Context, rec *record, in silence.Input, configured bool) (silence.Plan, error) {
	refreshed := false
	if configured && !rec.synced {
		if err := r.refresh(ctx, rec, in); err != nil {
			return silence.Plan{}, err
		}
		refreshed = true
	}
	in.Existing = rec.silences
	plan := silence.Decide(in)
	if !plan.Empty() && !refreshed {
		if err := r.refresh(ctx, rec, in); err != nil {
			return silence.Plan{}, err
		}
		in.Existing = rec.silences
		plan = silence.Decide(in)
	}
	return plan, nil
}

// apply expires, creates, then extends the silences of plan in
// Alertmanager, each whatever became of the others, and records in rec
// those it could. Its error joins those of every silence it could not.
func (r *Reconciler) apply(ctx context.Context, rec *record, plan silence.Plan) error {
	var errs []error
	for _, s := range plan.Expire {
		errs = append(errs, r.expire(ctx, rec, s))
	}
	for _, s := range plan.Create {
		errs = append(errs, r.create(ctx, rec, s))
	}
	for _, s := range plan.Extend {
		errs = append(errs, r.extend(ctx, rec, s))
	}
	return errors.Join(errs...)
}

// expire expires s in Alertmanager, and forgets it in rec. A silence
// Alertmanager no longer has is as good as expired.
func (r *Reconciler) expire(ctx context.Context, rec *record, s silence.Silence) error {
	err := r.Alertmanager.Expire(ctx, s.ID)
	if err != nil && !errors.Is(err, alertmanager.ErrNotFound) {
		return fmt.Errorf("expiring silence %s of %s: %w", s.ID, s.Key, err)
	}
	rec.forget(s.ID)
	count(outcomeExpired)
	ctrl.LoggerFrom(ctx).Info("expired a release silence", "silence", s.ID, "build", s.Key.Tag, "target", s.Key.Target)
	return nil
}

// create creates s in Alertmanager, and records it in rec.
func (r *Reconciler) create(ctx context.Context, rec *record, s silence.Silence) error {
	id, err := r.Alertmanager.Post(ctx, toAlertmanager(s))
	if err != nil {
		return fmt.Errorf("creating the silence of %s: %w", s.Key, err)
	}
	s.ID = id
	rec.silences = append(rec.silences, s)
	count(outcomeCreated)
	ctrl.LoggerFrom(ctx).Info("created a release silence", "silence", id, "build", s.Key.Tag, "target", s.Key.Target,
		"matchers", matcherStrings(s.Matchers), "endsAt", s.EndsAt.UTC().Format(time.RFC3339))
	return nil
}

// extend rewrites s in Alertmanager, which may give it a new ID, and
// records it in rec in place of the silence it was.
func (r *Reconciler) extend(ctx context.Context, rec *record, s silence.Silence) error {
	old := s.ID
	id, err := r.Alertmanager.Post(ctx, toAlertmanager(s))
	if err != nil {
		return fmt.Errorf("extending silence %s of %s: %w", old, s.Key, err)
	}
	rec.forget(old)
	s.ID = id
	rec.silences = append(rec.silences, s)
	count(outcomeExtended)
	ctrl.LoggerFrom(ctx).Info("extended a release silence", "silence", id, "was", old, "build", s.Key.Tag, "target", s.Key.Target,
		"endsAt", s.EndsAt.UTC().Format(time.RFC3339))
	return nil
}

// refresh replaces rec's silences with those Alertmanager holds for its
// app and target that this instance owns: created by Picchu, marked with
// their key and this instance (or none: silence.Owns), not expired.
func (r *Reconciler) refresh(ctx context.Context, rec *record, in silence.Input) error {
	listed, err := r.Alertmanager.List(ctx)
	if err != nil {
		return fmt.Errorf("listing silences: %w", err)
	}
	var ours []silence.Silence
	for _, s := range listed {
		if s.CreatedBy != silence.CreatedBy || s.Expired() {
			continue
		}
		k, instance, ok := silence.ParseMarker(s.Comment)
		if !ok || !silence.Owns(in.Instance, instance) || k.Namespace != in.Namespace || k.App != in.App || k.Target != in.Target {
			continue
		}
		ours = append(ours, fromAlertmanager(k, instance, s))
	}
	rec.silences, rec.synced = ours, true
	return nil
}

func (rec *record) forget(id string) {
	rec.silences = slices.DeleteFunc(rec.silences, func(s silence.Silence) bool { return s.ID == id })
}

func toAlertmanager(s silence.Silence) alertmanager.Silence {
	out := alertmanager.Silence{ID: s.ID, StartsAt: s.StartsAt, EndsAt: s.EndsAt, CreatedBy: silence.CreatedBy, Comment: s.Comment}
	for _, m := range s.Matchers {
		out.Matchers = append(out.Matchers, alertmanager.Matcher{Name: m.Name, Value: m.Value, IsRegex: m.IsRegex, IsEqual: m.IsEqual})
	}
	return out
}

func fromAlertmanager(k silence.Key, instance string, s alertmanager.Silence) silence.Silence {
	out := silence.Silence{ID: s.ID, Key: k, Instance: instance, Comment: s.Comment, StartsAt: s.StartsAt, EndsAt: s.EndsAt, Expired: s.Expired()}
	for _, m := range s.Matchers {
		out.Matchers = append(out.Matchers, silence.Matcher{Name: m.Name, Value: m.Value, IsRegex: m.IsRegex, IsEqual: m.IsEqual})
	}
	return out
}

func matcherStrings(ms []silence.Matcher) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}
