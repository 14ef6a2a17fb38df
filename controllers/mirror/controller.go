package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/shard"
)

// Defaults of the Reconciler's settings.
const (
	// DefaultResync is how long a copy written or found current is
	// trusted without a look at the mirror, and how often each Mirror's
	// copies are listed there to delete those whose source is gone: the
	// operator's safety resync.
	DefaultResync = 15 * time.Minute
	// DefaultTimeout bounds the requests of one run to one mirror.
	DefaultTimeout = 30 * time.Second
	// DefaultKindRecheck is how soon a mirror that did not serve
	// ExternalSecrets is asked again, while there are some to copy.
	DefaultKindRecheck = 30 * time.Second
)

// Reconciler copies the deployed Revisions of each Mirror's namespace, and
// their config, to the Mirror's cluster. See the package documentation.
type Reconciler struct {
	// Client reads the delivery cluster from the manager's cache and writes
	// Mirrors' status.
	Client client.Client
	// ExternalSecrets is the cache of the delivery cluster's ExternalSecrets
	// (controllers.ExternalSecretsCache); nil when it does not serve them.
	ExternalSecrets cache.Cache
	// Registry holds the clients of the Clusters Mirrors name.
	Registry *access.Registry
	// CrossNamespaceSources are the namespaces an additionalConfigSelector
	// of a Mirror of another namespace may select in
	// (--allow-cross-namespace-sources): a Mirror with one selecting
	// elsewhere is Stalled and copies nothing. None when empty.
	CrossNamespaceSources []string
	// Resync, Timeout and KindRecheck: the defaults above when 0.
	Resync, Timeout, KindRecheck time.Duration
	// MaxConcurrentReconciles bounds the Mirrors worked on at once (1 when 0).
	MaxConcurrentReconciles int
	// Shards, when set, say which replica works on a Mirror.
	Shards *shard.Coordinator
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// InstanceID is this Picchu's --instance-id: its copies carry it, and it
	// neither overwrites nor deletes copies another Picchu's Mirror wrote.
	InstanceID string

	memo  memo
	kinds kinds
	// externalSecrets reads the delivery cluster's ExternalSecrets; nil
	// when it does not serve them (watchExternalSecrets).
	externalSecrets client.Reader
	failing         sync.Map // Mirror key → consecutive runs that failed
}

// origin is who writes m's copies.
func (r *Reconciler) origin(m *picchuv1alpha1.Mirror) Origin {
	return Origin{NamespacedName: client.ObjectKeyFromObject(m), Instance: r.InstanceID}
}

// SetupWithManager watches Mirrors and what their runs read: Revisions,
// ReleaseManagers (a build deployed), ConfigMaps, Secrets and Clusters.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	r.Registry.OnForget(func(key types.NamespacedName) {
		r.memo.forgetCluster(key)
		r.kinds.forget(key.String())
	})
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.Mirror{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&picchuv1alpha1.Revision{}, handler.EnqueueRequestsFromMapFunc(r.mirrorsOfNamespace),
			builder.WithPredicates(revisionChanged())).
		Watches(&picchuv1alpha1.ReleaseManager{}, handler.EnqueueRequestsFromMapFunc(r.mirrorsOfNamespace),
			builder.WithPredicates(deployedTagsChanged())).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.mirrorsOfConfig)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.mirrorsOfConfig)).
		Watches(&picchuv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.mirrorsOfCluster)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles),
			ReconciliationTimeout:   r.timeout() + time.Minute,
		}).
		Named("mirror")
	if externalSecrets := r.watchExternalSecrets(); externalSecrets != nil {
		b = b.WatchesRawSource(externalSecrets)
	}
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("mirrors", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.MirrorList{} }, shardKey))
	}
	return b.Complete(r)
}

// shardKey is the shard key of a Mirror.
func shardKey(obj client.Object) string {
	return "mirror:" + obj.GetNamespace() + "/" + obj.GetName()
}

func (r *Reconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return DefaultResync
}

func (r *Reconciler) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultTimeout
}

func (r *Reconciler) kindRecheck() time.Duration {
	if r.KindRecheck > 0 {
		return r.KindRecheck
	}
	return DefaultKindRecheck
}

// Reconcile copies what one Mirror copies, deletes the copies whose source
// is gone, and records the outcome in its status and the failure counter.
// Nothing the mirror answers, or fails to, is an error: it is a condition,
// and the run is tried again with backoff.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &picchuv1alpha1.Mirror{}
	run, err := controllers.Prologue{What: "mirror", ShardKey: shardKey, Gone: r.forgetMirror}.Begin(ctx, r.Client, r.Shards, req, m)
	if run == nil {
		return ctrl.Result{}, err
	}
	defer run.Done()
	// The run stops, its writes unsent, once this replica no longer
	// holds the mirror's shard.
	ctx = run.Ctx
	if !m.DeletionTimestamp.IsZero() {
		r.forgetMirror(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	now := r.Now()
	o, failedApps, next, err := r.mirror(ctx, m, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	countFailures(m.Spec.ClusterName, failedApps)
	if len(o.Failures) > 0 {
		n := 1
		if v, ok := r.failing.Load(req.NamespacedName); ok {
			n = v.(int) + 1
		}
		r.failing.Store(req.NamespacedName, n)
		next = min(next, Retry(n))
		ctrl.LoggerFrom(ctx).V(1).Info("mirroring failed; retrying", "failures", o.Failures, "after", next)
	} else {
		r.failing.Delete(req.NamespacedName)
	}
	before := m.DeepCopy()
	SetConditions(m, o)
	if !equality.Semantic.DeepEqual(before.Status, m.Status) {
		if err := r.Client.Status().Patch(ctx, m, client.MergeFrom(before)); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status of mirror %s: %w", req.NamespacedName, err)
		}
	}
	return ctrl.Result{RequeueAfter: next}, nil
}

func (r *Reconciler) forgetMirror(key types.NamespacedName) {
	r.memo.forgetMirror(key)
	r.failing.Delete(key)
}

// build is one Revision to copy and its copies, config first.
type build struct {
	rev    *picchuv1alpha1.Revision
	copies []*unstructured.Unstructured
}

// mirror does one run for m: it returns its outcome, the apps of the
// builds it could not copy, and when to run again. Its error is a read of
// the delivery cluster's cache that failed.
func (r *Reconciler) mirror(ctx context.Context, m *picchuv1alpha1.Mirror, now time.Time) (Outcome, []string, time.Duration, error) {
	ru := &run{o: Outcome{Cluster: m.Spec.ClusterName}, next: r.resync()}
	wanted, err := r.wanted(ctx, m, &ru.o)
	if err != nil {
		return ru.o, nil, 0, err
	}
	t, refused, retryAt, err := r.reach(ctx, m, now)
	if err != nil {
		return ru.o, nil, 0, err
	}
	if t == nil {
		if retryAt > 0 {
			ru.next = retryAt
		}
		ru.o.Failures = append(ru.o.Failures, *refused)
		ru.failedApps = appsOf(wanted)
		return ru.result()
	}

	notes := map[string]bool{}
	builds := r.builds(ctx, m, t, wanted, notes, now, ru)
	if notes[esNote(t.key.Name)] {
		ru.soonest(r.kindRecheck())
	}

	rctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	if r.writeBuilds(rctx, t, r.origin(m), builds, now, ru) {
		r.collectGone(rctx, m, t, now, ru)
	}
	ru.o.Notes = sortedNotes(notes)
	return ru.result()
}

// run is what one run of a Mirror has found so far: its outcome, the apps
// of the builds it could not copy, and when to run again.
type run struct {
	o          Outcome
	failedApps []string
	next       time.Duration
}

// failBuild records that rev's build was not copied, for reason.
func (ru *run) failBuild(rev *picchuv1alpha1.Revision, reason string, err error) {
	ru.o.Failures = append(ru.o.Failures, Failure{Build: rev.Name, App: rev.Spec.App.Name, Reason: reason, Message: err.Error()})
	ru.failedApps = append(ru.failedApps, rev.Spec.App.Name)
}

// soonest brings the next run forward to after d, when that is sooner.
func (ru *run) soonest(d time.Duration) {
	ru.next = min(ru.next, d)
}

// result is what mirror returns once the run is done.
func (ru *run) result() (Outcome, []string, time.Duration, error) {
	return ru.o, ru.failedApps, ru.next, nil
}

// appsOf lists the apps of revs, in their order.
func appsOf(revs []*picchuv1alpha1.Revision) []string {
	var apps []string
	for _, rev := range revs {
		apps = append(apps, rev.Spec.App.Name)
	}
	return apps
}

// reach returns the client of m's mirror cluster or, when the run may not
// or cannot write there, the failure that says why and how soon the
// cluster's circuit breaker lets a request through (0 when not known). Its
// error is a read of the delivery cluster's cache that failed.
func (r *Reconciler) reach(ctx context.Context, m *picchuv1alpha1.Mirror, now time.Time) (*target, *Failure, time.Duration, error) {
	// Refused before the mirror is asked anything: no copy is written,
	// and none deleted.
	if msg := r.notAllowed(m); msg != "" {
		return nil, &Failure{Reason: picchuv1alpha1.ReasonSourceNotAllowed, Message: msg}, 0, nil
	}
	cl := &picchuv1alpha1.Cluster{}
	clusterKey := types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.ClusterName}
	if err := r.Client.Get(ctx, clusterKey, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &Failure{Reason: picchuv1alpha1.ReasonClusterNotFound, Message: fmt.Sprintf("no Cluster %s in namespace %s", m.Spec.ClusterName, m.Namespace)}, 0, nil
		}
		return nil, nil, 0, fmt.Errorf("reading cluster %s of mirror %s: %w", clusterKey, r.origin(m), err)
	}
	t, reason, msg, retryAt := r.connect(cl, now)
	if t == nil {
		return nil, &Failure{Reason: reason, Message: msg}, retryAt, nil
	}
	return t, nil, 0, nil
}

// builds reads at home what the copies of each wanted build are made of.
// A build whose copies cannot be read is recorded in ru, and left out.
func (r *Reconciler) builds(ctx context.Context, m *picchuv1alpha1.Mirror, t *target, wanted []*picchuv1alpha1.Revision, notes map[string]bool, now time.Time, ru *run) []build {
	var builds []build
	for _, rev := range wanted {
		copies, err := r.copiesOf(ctx, m, t, rev, notes, now)
		var unanswered *discoveryError
		switch {
		case errors.As(err, &unanswered):
			ru.failBuild(rev, picchuv1alpha1.ReasonUnreachable, err)
		case err != nil:
			ru.failBuild(rev, picchuv1alpha1.ReasonConfigUnreadable, err)
		default:
			builds = append(builds, build{rev: rev, copies: copies})
		}
	}
	return builds
}

// writeBuilds writes each build's copies to t, recording in ru what it
// could not write. It stops at the first write the mirror does not
// answer, and says whether it went through them all.
func (r *Reconciler) writeBuilds(ctx context.Context, t *target, mirrorKey Origin, builds []build, now time.Time, ru *run) bool {
	for i, b := range builds {
		err := r.write(ctx, t, mirrorKey, b, now)
		if err == nil {
			ru.o.Copied++
			continue
		}
		reason := r.writeFailure(t, err, now, ru)
		if reason != picchuv1alpha1.ReasonUnreachable {
			ru.failBuild(b.rev, reason, err)
			continue
		}
		// Unreachable: the builds left would wait out the same failure.
		ru.o.Failures = append(ru.o.Failures, Failure{Reason: picchuv1alpha1.ReasonUnreachable, Message: err.Error()})
		for _, left := range builds[i:] {
			ru.failedApps = append(ru.failedApps, left.rev.Spec.App.Name)
		}
		return false
	}
	return true
}

// writeFailure is the reason of a write to t that failed with err. A
// mirror that refused an ExternalSecret it said it served is remembered
// as not serving them, and the run is tried again sooner.
func (r *Reconciler) writeFailure(t *target, err error, now time.Time, ru *run) string {
	var notServed *notServedError
	if errors.As(err, &notServed) && notServed.gvk == ExternalSecretKind {
		// Said served, then refused: the next run copies the build
		// without them.
		r.kinds.notServed(t.key.String(), notServed.gvk, now)
		ru.soonest(r.kindRecheck())
	}
	// A kind not served (Picchu's CRDs not installed there) is refused
	// until a person installs it.
	if notServed != nil {
		return picchuv1alpha1.ReasonRejected
	}
	return Classify(err)
}

// collectGone deletes m's copies on t whose source is gone, and records
// in ru how many it deleted and why it could not delete the others.
func (r *Reconciler) collectGone(ctx context.Context, m *picchuv1alpha1.Mirror, t *target, now time.Time, ru *run) {
	deleted, err := r.collect(ctx, m, t, now)
	ru.o.Deleted = deleted
	if err != nil {
		reason := Classify(err)
		if reason != picchuv1alpha1.ReasonRejected {
			reason = picchuv1alpha1.ReasonUnreachable
		}
		ru.o.Failures = append(ru.o.Failures, Failure{Reason: reason, Message: err.Error()})
	}
}

func sortedNotes(notes map[string]bool) []string {
	return slices.Sorted(maps.Keys(notes))
}

// notAllowed says which of m's additionalConfigSelectors selects in a
// namespace the operator does not allow it to copy from, naming the field;
// "" when none does.
func (r *Reconciler) notAllowed(m *picchuv1alpha1.Mirror) string {
	var refused []string
	for i, a := range m.Spec.AdditionalConfigSelectors {
		if a.Namespace != "" && !controllers.SourcesAllowed(m.Namespace, a.Namespace, r.CrossNamespaceSources) {
			refused = append(refused, fmt.Sprintf("spec.additionalConfigSelectors[%d].namespace: %s", i, a.Namespace))
		}
	}
	if len(refused) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: not this Mirror's namespace (%s), and the operator does not allow copying from it "+
		"(--allow-cross-namespace-sources); nothing is copied or deleted until the selector is changed or the "+
		"operator allows it (the copies made before stay as they are)", strings.Join(refused, "; "), m.Namespace)
}

// esNote is the note of a mirror that does not serve ExternalSecrets.
func esNote(cluster string) string {
	return fmt.Sprintf("ExternalSecrets not copied: cluster %s does not serve %s", cluster, ExternalSecretKind.GroupVersion().WithResource("externalsecrets").GroupResource())
}

// wanted lists the Revisions of m's namespace to copy now, and counts in o
// those left out.
func (r *Reconciler) wanted(ctx context.Context, m *picchuv1alpha1.Mirror, o *Outcome) ([]*picchuv1alpha1.Revision, error) {
	revs := &picchuv1alpha1.RevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(m.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the revisions of namespace %s: %w", m.Namespace, err)
	}
	var out []*picchuv1alpha1.Revision
	for i := range revs.Items {
		rev := &revs.Items[i]
		rms, err := r.releaseManagers(ctx, rev)
		if err != nil {
			return nil, err
		}
		switch Decide(rev, Deployed(rev, rms)) {
		case SkipNone:
			out = append(out, rev)
		case SkipDisabled:
			o.Disabled++
		case SkipNotDeployed:
			o.Pending++
		}
	}
	slices.SortFunc(out, func(a, b *picchuv1alpha1.Revision) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// releaseManagers reads the ReleaseManager of each target of rev that has one.
func (r *Reconciler) releaseManagers(ctx context.Context, rev *picchuv1alpha1.Revision) ([]*picchuv1alpha1.ReleaseManager, error) {
	var out []*picchuv1alpha1.ReleaseManager
	for _, t := range rev.Spec.Targets {
		rm := &picchuv1alpha1.ReleaseManager{}
		key := types.NamespacedName{Namespace: rev.Namespace, Name: picchuv1alpha1.ReleaseManagerName(rev.Spec.App.Name, t.Name)}
		if err := r.Client.Get(ctx, key, rm); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading release manager %s: %w", key, err)
		}
		out = append(out, rm)
	}
	return out, nil
}

// connect returns the registry's client of cl, or why there is none: the
// reason, a message and, when its circuit breaker is open, how soon it
// lets a request through.
func (r *Reconciler) connect(cl *picchuv1alpha1.Cluster, now time.Time) (*target, string, string, time.Duration) {
	key := client.ObjectKeyFromObject(cl)
	if !cl.Spec.Enabled {
		return nil, picchuv1alpha1.ReasonClusterNotConnected, fmt.Sprintf("cluster %s is not enabled", cl.Name), 0
	}
	remoteCluster, ok := r.Registry.Get(key)
	if !ok {
		msg := fmt.Sprintf("cluster %s is not connected yet", cl.Name)
		if ready := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady); ready != nil && ready.Status != metav1.ConditionTrue {
			msg = fmt.Sprintf("cluster %s is not connected: %s: %s", cl.Name, ready.Reason, ready.Message)
		}
		return nil, picchuv1alpha1.ReasonClusterNotConnected, msg, 0
	}
	if h, ok := r.Registry.Health(key); ok && h.State != breaker.Closed {
		var wait time.Duration
		if !h.RetryAt.IsZero() {
			wait = max(h.RetryAt.Sub(now), 100*time.Millisecond)
		}
		return nil, picchuv1alpha1.ReasonUnreachable, fmt.Sprintf("cluster %s: circuit breaker %s; last error: %s", cl.Name, h.State, h.LastError), wait
	}
	return &target{
		key:    key,
		reader: remoteCluster.GetAPIReader(),
		writer: remoteCluster.GetClient(),
		mapper: remoteCluster.GetRESTMapper(),
	}, "", "", 0
}

// copiesOf reads at home what a build's copies are made of, and returns
// them: the config of each target's configSelector, then of the Mirror's
// additionalConfigSelectors, then the Revision. ExternalSecrets are left
// out, with a note, when the mirror does not serve them.
func (r *Reconciler) copiesOf(ctx context.Context, m *picchuv1alpha1.Mirror, t *target, rev *picchuv1alpha1.Revision, notes map[string]bool, now time.Time) ([]*unstructured.Unstructured, error) {
	mirrorKey := r.origin(m)
	var out []*unstructured.Unstructured
	seen := map[copyKey]bool{}
	add := func(u *unstructured.Unstructured) {
		k := copyKey{gvk: u.GroupVersionKind(), namespace: u.GetNamespace(), name: u.GetName()}
		if !seen[k] {
			seen[k] = true
			out = append(out, u)
		}
	}
	clusters := map[string]map[string]bool{}
	for _, target := range rev.Spec.Targets {
		sel, err := target.ConfigLabels()
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", target.Name, err)
		}
		if sel == nil {
			continue
		}
		if err := r.config(ctx, rev.Namespace, sel, mirrorKey, clusters, notes, add); err != nil {
			return nil, fmt.Errorf("target %s: %w", target.Name, err)
		}
		items, err := r.listExternalSecrets(ctx, rev.Namespace, sel)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", target.Name, err)
		}
		if len(items) == 0 {
			continue
		}
		served, err := r.kinds.served(t.key.String(), t.mapper, ExternalSecretKind, r.kindRecheck(), now)
		if err != nil {
			return nil, err
		}
		if !served {
			notes[esNote(t.key.Name)] = true
			continue
		}
		for i := range items {
			u, err := ExternalSecretCopy(&items[i], mirrorKey)
			if err != nil {
				return nil, err
			}
			add(u)
		}
	}
	for _, a := range m.Spec.AdditionalConfigSelectors {
		ns, sel, err := AdditionalSelector(a, m.Namespace, rev.Spec.App.Name, rev.Spec.App.Tag)
		if err != nil {
			return nil, err
		}
		if err := r.config(ctx, ns, sel, mirrorKey, clusters, notes, add); err != nil {
			return nil, fmt.Errorf("additionalConfigSelector: %w", err)
		}
	}
	u, err := RevisionCopy(rev, mirrorKey)
	if err != nil {
		return nil, err
	}
	return append(out, u), nil
}

// config adds the copies of the ConfigMaps and Secrets of namespace that
// sel selects, credentials left out with a note.
func (r *Reconciler) config(ctx context.Context, namespace string, sel labels.Selector, mirror Origin,
	clusters map[string]map[string]bool, notes map[string]bool, add func(*unstructured.Unstructured)) error {
	opts := []client.ListOption{client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}}
	cms := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, cms, opts...); err != nil {
		return fmt.Errorf("listing config maps of namespace %s: %w", namespace, err)
	}
	for i := range cms.Items {
		u, err := ConfigMapCopy(&cms.Items[i], mirror)
		if err != nil {
			return err
		}
		add(u)
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, opts...); err != nil {
		return fmt.Errorf("listing secrets of namespace %s: %w", namespace, err)
	}
	if len(secrets.Items) == 0 {
		return nil
	}
	if _, ok := clusters[namespace]; !ok {
		list := &picchuv1alpha1.ClusterList{}
		if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return fmt.Errorf("listing clusters of namespace %s, whose secrets are never copied: %w", namespace, err)
		}
		names := map[string]bool{}
		for _, cl := range list.Items {
			names[cl.Name] = true
		}
		clusters[namespace] = names
	}
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if why := access.Credentials(s, clusters[namespace]); why != "" {
			notes[fmt.Sprintf("secret %s/%s not copied: %s", s.Namespace, s.Name, why)] = true
			continue
		}
		u, err := SecretCopy(s, mirror)
		if err != nil {
			return err
		}
		add(u)
	}
	return nil
}

// write makes the mirror hold a build's copies: their namespaces, then
// each copy in order.
func (r *Reconciler) write(ctx context.Context, t *target, mirror Origin, b build, now time.Time) error {
	for _, u := range b.copies {
		if err := r.ensureNamespace(ctx, t, mirror, u.GetNamespace(), now); err != nil {
			return err
		}
	}
	for _, u := range b.copies {
		if err := r.put(ctx, t, mirror, u, now); err != nil {
			return err
		}
	}
	return nil
}

// collect deletes from the mirror the copies m wrote whose source is gone
// at home: those it remembers writing, and, once per resync period (and
// after a restart, or the mirror's client being replaced), those it finds
// listing the mirror. It returns how many it deleted.
func (r *Reconciler) collect(ctx context.Context, m *picchuv1alpha1.Mirror, t *target, now time.Time) (int, error) {
	mirrorKey := r.origin(m)
	candidates := r.memo.of(t.key, mirrorKey)
	if r.memo.listDue(mirrorKey.NamespacedName, t.key, now, r.resync()) {
		namespaces := []string{m.Namespace}
		for _, a := range m.Spec.AdditionalConfigSelectors {
			if a.Namespace != "" && !slices.Contains(namespaces, a.Namespace) {
				namespaces = append(namespaces, a.Namespace)
			}
		}
		gvks := []schema.GroupVersionKind{RevisionKind, ConfigMapKind, SecretKind}
		if served, ok := r.kinds.known(t.key.String(), ExternalSecretKind); ok && served {
			gvks = append(gvks, ExternalSecretKind)
		}
		for _, ns := range namespaces {
			for _, gvk := range gvks {
				found, err := listCopies(ctx, t, mirrorKey, gvk, ns)
				if err != nil {
					return 0, err
				}
				candidates = append(candidates, found...)
			}
		}
		r.memo.setListed(mirrorKey.NamespacedName, t.key, now)
	}
	slices.SortFunc(candidates, func(a, b copyKey) int {
		return strings.Compare(a.gvk.Kind+"/"+a.namespace+"/"+a.name, b.gvk.Kind+"/"+b.namespace+"/"+b.name)
	})
	candidates = slices.Compact(candidates)
	deleted := 0
	for _, key := range candidates {
		gone, err := r.sourceGone(ctx, key)
		if err != nil {
			ctrl.LoggerFrom(ctx).V(1).Info("not deleting a copy whose source cannot be read", "copy", key, "error", err.Error())
			continue
		}
		if !gone {
			continue
		}
		ok, err := r.remove(ctx, t, mirrorKey, key)
		if err != nil {
			return deleted, err
		}
		if ok {
			deleted++
			ctrl.LoggerFrom(ctx).Info("deleted a copy whose source is gone", "kind", key.gvk.Kind,
				"namespace", key.namespace, "name", key.name, "cluster", t.key.String())
		}
	}
	return deleted, nil
}

// sourceGone says whether the source of a copy is known not to exist at
// home: read from the cache, never guessed.
func (r *Reconciler) sourceGone(ctx context.Context, key copyKey) (bool, error) {
	var obj client.Object
	switch key.gvk {
	case RevisionKind:
		obj = &picchuv1alpha1.Revision{}
	case ConfigMapKind:
		obj = &corev1.ConfigMap{}
	case SecretKind:
		obj = &corev1.Secret{}
	case ExternalSecretKind:
		return r.externalSecretGone(ctx, key.namespace, key.name)
	default:
		return false, nil
	}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// mirrorsOfNamespace maps an object to the Mirrors of its namespace.
func (r *Reconciler) mirrorsOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &picchuv1alpha1.MirrorList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the mirrors of a namespace", "namespace", obj.GetNamespace())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// mirrorsOfConfig maps a ConfigMap or Secret to the Mirrors that may copy it.
func (r *Reconciler) mirrorsOfConfig(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.mirrorsSelectingIn(ctx, obj.GetNamespace())
}

// mirrorsSelectingIn are the Mirrors of namespace and those with an
// additionalConfigSelector in it.
func (r *Reconciler) mirrorsSelectingIn(ctx context.Context, namespace string) []reconcile.Request {
	list := &picchuv1alpha1.MirrorList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing mirrors")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		m := &list.Items[i]
		if m.Namespace == namespace || slices.ContainsFunc(m.Spec.AdditionalConfigSelectors, func(a picchuv1alpha1.AdditionalConfigSelector) bool {
			return a.Namespace == namespace
		}) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)})
		}
	}
	return out
}

// mirrorsOfCluster maps a Cluster to the Mirrors that name it.
func (r *Reconciler) mirrorsOfCluster(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &picchuv1alpha1.MirrorList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the mirrors of a namespace", "namespace", obj.GetNamespace())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.ClusterName == obj.GetName() {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}

// revisionChanged lets through creations, deletions and updates of a
// Revision's spec, labels or annotations, or of whether its status counts
// replicas: not the status a release moves on every step.
func revisionChanged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*picchuv1alpha1.Revision)
		n, ok2 := e.ObjectNew.(*picchuv1alpha1.Revision)
		if !ok1 || !ok2 {
			return true
		}
		return o.Generation != n.Generation ||
			!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
			!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
			Deployed(o, nil) != Deployed(n, nil)
	}}
}

// deployedTagsChanged lets through the updates of a ReleaseManager that
// change which of its builds count replicas.
func deployedTagsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*picchuv1alpha1.ReleaseManager)
			n, ok2 := e.ObjectNew.(*picchuv1alpha1.ReleaseManager)
			if !ok1 || !ok2 {
				return true
			}
			return !maps.Equal(DeployedTags(o), DeployedTags(n))
		},
	}
}
