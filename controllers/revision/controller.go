package revision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/decide/release"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/shard"
)

// Reconciler makes sure every (app, target) of a Revision has its
// ReleaseManager, keeps the Revision's app and fleet labels, deletes it once
// every target marks it deletable, fails it when a target timed out, and
// fails it when a target timed out or its alerts fired before it proved
// itself, and mirrors each target's release state from the ReleaseManager into the
// Revision's status.
type Reconciler struct {
	Client client.Client
	// Recorder records events on Revisions; may be nil.
	Recorder events.EventRecorder
	// ProvenPercent, when above 0, is the peak in the proving target from
	// which SLO alerts no longer fail a build, as in the original; at 0 a
	// build is judged until it is released and watched.
	ProvenPercent           int32
	MaxConcurrentReconciles int
	// Shards, when set, are the apps this replica drives: Revisions of
	// other apps are left to the replicas holding their shards.
	Shards *shard.Coordinator
	// MirrorInterval is the least time between two writes of one
	// Revision's mirrored status (DefaultMirrorInterval when 0): the
	// changes of its ReleaseManagers within it are written together.
	MirrorInterval time.Duration
	// ProgressInterval is how long a Revision's progress, once it moved,
	// waits to be written (DefaultProgressInterval when 0): what else
	// moves meanwhile goes with it. See mirrorWait.
	ProgressInterval time.Duration
	// ProtectedNamespaces are the namespaces no app is deployed in
	// (picchuv1alpha1.ProtectedNamespaces): a target whose "<app>-<target>"
	// is one gets no ReleaseManager, and the Revision is held there.
	ProtectedNamespaces []string
	// AppNamespacePolicy says which namespaces the apps of each delivery
	// namespace may use: a target outside it gets no ReleaseManager.
	AppNamespacePolicy picchuv1alpha1.AppNamespacePolicy

	// mirrored is each Revision's mirror: a mirrorRecord.
	mirrored sync.Map
}

// DefaultMirrorInterval is the default MirrorInterval. A release step
// changes the state, traffic or scale of two builds in every target, and
// each change used to cost a write of each Revision's status: the largest
// share of the writes to the delivery cluster. The ReleaseManager's status
// is where the engine records each change as it happens; the Revisions
// show it within this interval.
const DefaultMirrorInterval = 2 * time.Second

// DefaultProgressInterval is the default ProgressInterval. The states,
// percents and replicas of a release move at every step, in two builds at
// once; the Revisions show them within this interval, every move within
// it in one write, and what a person or a GitOps tool acts on (a
// condition's status or reason, a hold, alerts firing, a pause) within
// MirrorInterval.
const DefaultProgressInterval = 10 * time.Second

// SetupWithManager watches Revisions and the ReleaseManagers of their apps.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := controllers.IndexRevisionsByApp(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&picchuv1alpha1.Revision{}).
		Watches(&picchuv1alpha1.ReleaseManager{}, handler.EnqueueRequestsFromMapFunc(r.revisionsOfApp)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles),
			ReconciliationTimeout:   time.Minute,
		}).
		Named("revision")
	if r.Shards != nil {
		b = b.WatchesRawSource(r.Shards.SourceOf("revisions", mgr.GetClient(),
			func() client.ObjectList { return &picchuv1alpha1.RevisionList{} }, shardKey))
	}
	return b.Complete(r)
}

// shardKey is the shard key of a Revision: its app's.
func shardKey(obj client.Object) string {
	rev, _ := obj.(*picchuv1alpha1.Revision)
	if rev == nil {
		return ""
	}
	return shard.AppKey(rev.Namespace, rev.Spec.App.Name)
}

// revisionsOfApp maps a ReleaseManager to the Revisions of its app.
func (r *Reconciler) revisionsOfApp(ctx context.Context, obj client.Object) []reconcile.Request {
	rm, ok := obj.(*picchuv1alpha1.ReleaseManager)
	if !ok {
		return nil
	}
	return controllers.Requests(ctx, r.Client, &picchuv1alpha1.RevisionList{}, "revisions of a release manager's app",
		[]any{"app", rm.Spec.App}, client.InNamespace(rm.Namespace), controllers.OfApp(rm.Spec.App))
}

// Reconcile runs the phases for one Revision: deletion once every target
// marks it deletable, labels, release managers, failing it when a target
// timed out or its alerts fired, and status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rev := &picchuv1alpha1.Revision{}
	forget := func(key types.NamespacedName) { r.mirrored.Delete(key) }
	run, err := controllers.Prologue{What: "revision", ShardKey: shardKey, Gone: forget}.Begin(ctx, r.Client, r.Shards, req, rev)
	if run == nil {
		return ctrl.Result{}, err
	}
	defer run.Done()
	// The run stops, its writes unsent, once this replica no longer
	// holds the app's shard.
	ctx = run.Ctx
	if !rev.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if err := rev.DecodeError(); err != nil {
		return ctrl.Result{}, controllers.ReportUndecodable(ctx, r.Client, r.Recorder, "Revision", rev, &rev.Status.Conditions, err)
	}
	// A Revision every target has let go of is deleted before anything is
	// ensured for it.
	if deleted, err := r.deleteIfDeletable(ctx, rev); err != nil || deleted {
		return ctrl.Result{}, err
	}
	if err := r.ensureLabels(ctx, rev); err != nil {
		return ctrl.Result{}, err
	}
	var rms []*picchuv1alpha1.ReleaseManager
	held := map[string]*picchuv1alpha1.RevisionHold{}
	for i := range rev.Spec.Targets {
		if reason, err := picchuv1alpha1.NamespaceRefused(rev.Namespace, rev.Spec.App.Name, rev.Spec.Targets[i].Name, r.ProtectedNamespaces, r.AppNamespacePolicy); err != nil {
			// Admission refuses such a Revision; one that got in (webhooks
			// off) gets no ReleaseManager, so nothing touches a cluster.
			held[rev.Spec.Targets[i].Name] = &picchuv1alpha1.RevisionHold{Reason: reason, Message: err.Error()}
			if r.Recorder != nil && !heldBefore(rev, rev.Spec.Targets[i].Name, reason) {
				r.Recorder.Eventf(rev, nil, corev1.EventTypeWarning, reason, "Hold", "%s", err.Error())
			}
			continue
		}
		rm, err := r.ensureReleaseManager(ctx, rev, &rev.Spec.Targets[i])
		var collision *collisionError
		if errors.As(err, &collision) {
			// Admission rejects such a Revision; one that got in (webhooks
			// off, or both created at once) is held in that target.
			ctrl.LoggerFrom(ctx).Info("not releasing in a target whose name another app has", "error", err.Error())
			if r.Recorder != nil {
				r.Recorder.Eventf(rev, nil, corev1.EventTypeWarning, "NameCollision", "Hold", "%s", err.Error())
			}
			continue
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		rms = append(rms, rm)
	}
	if err := r.failIfBad(ctx, rev, rms); err != nil {
		return ctrl.Result{}, err
	}
	return r.mirrorStatus(ctx, rev, rms, held)
}

// heldBefore says the Revision's status already records the target held
// for reason.
func heldBefore(rev *picchuv1alpha1.Revision, target, reason string) bool {
	for _, ts := range rev.Status.Targets {
		if ts.Name == target && ts.Held != nil && ts.Held.Reason == reason {
			return true
		}
	}
	return false
}

// deleteIfDeletable deletes the Revision when Deletable says so, and reports
// whether Reconcile should stop here: the Revision is gone, or it changed
// since it was read, in which case the change's event brings it back.
func (r *Reconciler) deleteIfDeletable(ctx context.Context, rev *picchuv1alpha1.Revision) (bool, error) {
	if !Deletable(rev) {
		return false, nil
	}
	log := ctrl.LoggerFrom(ctx)
	// Preconditions: delete only the object whose labels were checked.
	pre := client.Preconditions{UID: &rev.UID, ResourceVersion: &rev.ResourceVersion}
	err := r.Client.Delete(ctx, rev, pre)
	if apierrors.IsConflict(err) {
		log.Info("revision changed since it was read; not deleting it yet")
		return true, nil
	}
	if err := client.IgnoreNotFound(err); err != nil {
		return false, fmt.Errorf("deleting revision %s/%s, deletable in every target: %w", rev.Namespace, rev.Name, err)
	}
	log.Info("deleted revision: every target marks it deletable", "targets", len(rev.Spec.Targets))
	releasemetrics.ForgetRevision(rev.Spec.App.Name, rev.Spec.App.Tag)
	return true, nil
}

// Deletable says whether every target of the Revision carries the label
// "target-deletable.picchu.medium.engineering/<target>" with the value
// "true". A Revision without targets is never deletable.
func Deletable(rev *picchuv1alpha1.Revision) bool {
	if len(rev.Spec.Targets) == 0 {
		return false
	}
	for _, t := range rev.Spec.Targets {
		if rev.Labels[picchuv1alpha1.LabelTargetDeletablePrefix+t.Name] != "true" {
			return false
		}
	}
	return true
}

// failIfBad marks the Revision failed, with the reason in annotations, an
// event and the picchu_revision_failed counter, when a ReleaseManager
// records its tag as timing out, or records SLO or canary alerts that fired
// while it had not proven itself (FailReason). A Revision already failed is
// left as it is.
func (r *Reconciler) failIfBad(ctx context.Context, rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager) error {
	if rev.Spec.Failed {
		return nil
	}
	reason, ok := FailReason(rev, rms, r.ProvenPercent, time.Now())
	if !ok {
		return nil
	}
	before := rev.DeepCopy()
	rev.Spec.Failed = true
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	rev.Annotations[picchuv1alpha1.AnnotationFailedReason] = reason
	rev.Annotations[picchuv1alpha1.AnnotationFailedAt] = time.Now().UTC().Format(time.RFC3339)
	if err := r.Client.Patch(ctx, rev, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("failing revision %s/%s, %s: %w", rev.Namespace, rev.Name, reason, err)
	}
	ctrl.LoggerFrom(ctx).Info("failed revision", "reason", reason)
	if r.Recorder != nil {
		r.Recorder.Eventf(rev, nil, corev1.EventTypeWarning, "Failed", "Fail",
			"%s; its traffic goes back to the previous release in every cluster", reason)
	}
	releasemetrics.Failed(rev.Spec.App.Name, rev.Spec.App.Tag)
	return nil
}

// FailReason says why Picchu fails a Revision at now, if it does: a target
// timed out; a live cluster rejected the build's objects as invalid while
// it had not proven itself (release.Proven with threshold, from the
// targets' records); or, unless ignoreSLOs, a target recorded SLO or canary
// alerts firing for its tag. A ReleaseManager records them only while it
// judges the build (until it is released and watched); with a threshold,
// not once the build has proven itself by its peak, as in the original.
func FailReason(rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager, threshold int32, now time.Time) (string, bool) {
	tag := rev.Spec.App.Tag
	if target, ok := TimedOutTarget(tag, rms); ok {
		return "timed out in " + target, true
	}
	for _, rm := range rms {
		for _, s := range rm.Status.Revisions {
			// A cluster that will not take a build fails it, whatever its
			// SLOs, unless it has proven itself: a proven build a cluster
			// has come to refuse (a new admission policy) is held, with
			// the reason in its ReleaseManager's status and events.
			if s.Tag == tag && s.Rejected != "" && !settledFailure(s) && !release.Proven(TargetPeaks(rev, rms, now), threshold) {
				return fmt.Sprintf("rejected in %s by cluster %s", rm.Spec.Target, s.Rejected), true
			}
		}
	}
	if rev.Spec.IgnoreSLOs {
		return "", false
	}
	var firing []string
	for _, rm := range rms {
		for _, s := range rm.Status.Revisions {
			if s.Tag == tag && len(s.TriggeredAlerts) > 0 && !settledFailure(s) {
				where := rm.Spec.Target
				if s.TriggeredWhere != "" {
					where += " (" + s.TriggeredWhere + ")"
				}
				if s.Verdict != "" {
					where += ": " + s.Verdict
				}
				firing = append(firing, fmt.Sprintf("%s in %s", strings.Join(s.TriggeredAlerts, ", "), where))
			}
		}
	}
	if len(firing) == 0 || (threshold > 0 && release.Proven(TargetPeaks(rev, rms, now), threshold)) {
		return "", false
	}
	return "SLO alerts firing: " + strings.Join(firing, "; "), true
}

// settledFailure says a target still records the build as failing or
// failed: what it records against the build is what failed it before. A
// Revision retried (spec.failed set back to false) is not failed again on
// that record; its target clears it as it deploys the build again.
func settledFailure(s picchuv1alpha1.ReleaseManagerRevisionStatus) bool {
	return release.State(s.State.Current).IsFailed()
}

// TargetPeaks lists the Revision's targets in its order with the peak each
// ReleaseManager records for its tag, whether it has waves left there, and
// whether, at now, it is released there and its watch is over.
func TargetPeaks(rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager, now time.Time) []release.TargetPeak {
	out := make([]release.TargetPeak, 0, len(rev.Spec.Targets))
	for _, t := range rev.Spec.Targets {
		tp := release.TargetPeak{Name: t.Name, Acceptance: t.AcceptanceTarget}
		for _, rm := range rms {
			if rm.Spec.Target != t.Name {
				continue
			}
			for _, s := range rm.Status.Revisions {
				if s.Tag == rev.Spec.App.Tag {
					tp.Peak = s.PeakPercent
					state := release.State(s.State.Current)
					tp.WavesLeft = release.WavesLeft(state, int(s.Wave), s.WavePercents, release.MaxPercent(t.Release))
					var since time.Time
					if s.State.LastUpdated != nil {
						since = s.State.LastUpdated.Time
					}
					tp.Done = state.IsReleased() && !release.Judged(release.JudgeInput{State: state, Since: since, Watch: release.WatchOf(t.Release), Now: now})
				}
			}
		}
		out = append(out, tp)
	}
	return out
}

// TimedOutTarget returns the target of the first ReleaseManager whose
// status records tag in state timingout, and whether there is one.
func TimedOutTarget(tag string, rms []*picchuv1alpha1.ReleaseManager) (string, bool) {
	for _, rm := range rms {
		for _, s := range rm.Status.Revisions {
			if s.Tag == tag && release.State(s.State.Current).IsTimedOut() {
				return rm.Spec.Target, true
			}
		}
	}
	return "", false
}

// ensureLabels sets the labels Picchu keeps (KeptLabels): the app label
// and one fleet label per target, without fleet labels of fleets the
// Revision no longer targets. A Revision admitted through the webhook has
// them already, and is not written.
func (r *Reconciler) ensureLabels(ctx context.Context, rev *picchuv1alpha1.Revision) error {
	want := rev.KeptLabels()
	if maps.Equal(want, rev.Labels) {
		return nil
	}
	before := rev.DeepCopy()
	rev.Labels = want
	if err := r.Client.Patch(ctx, rev, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("labelling revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	return nil
}

// ensureReleaseManager creates the ReleaseManager of the Revision's app in
// target if it does not exist, and returns it.
func (r *Reconciler) ensureReleaseManager(ctx context.Context, rev *picchuv1alpha1.Revision, target *picchuv1alpha1.RevisionTarget) (*picchuv1alpha1.ReleaseManager, error) {
	key := client.ObjectKey{Namespace: rev.Namespace, Name: picchuv1alpha1.ReleaseManagerName(rev.Spec.App.Name, target.Name)}
	rm := &picchuv1alpha1.ReleaseManager{}
	err := r.Client.Get(ctx, key, rm)
	if err == nil {
		if rm.Spec.App != rev.Spec.App.Name || rm.Spec.Target != target.Name {
			return nil, &collisionError{name: key.Name, app: rev.Spec.App.Name, target: target.Name, rm: rm}
		}
		return rm, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading release manager %s: %w", key, err)
	}
	rm = &picchuv1alpha1.ReleaseManager{
		ObjectMeta: metav1.ObjectMeta{
			Name:      key.Name,
			Namespace: key.Namespace,
			// Created with the finalizer the ReleaseManager controller
			// keeps, which it would otherwise add in a write of its own:
			// one write fewer per app and target.
			Finalizers: []string{picchuv1alpha1.FinalizerReleaseManager},
			Labels: map[string]string{
				picchuv1alpha1.LabelApp:    rev.Spec.App.Name,
				picchuv1alpha1.LabelTarget: target.Name,
				picchuv1alpha1.LabelFleet:  target.Fleet,
			},
		},
		Spec: picchuv1alpha1.ReleaseManagerSpec{App: rev.Spec.App.Name, Target: target.Name, Fleet: target.Fleet},
	}
	if err := r.Client.Create(ctx, rm); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating release manager %s: %w", key, err)
	}
	return rm, nil
}

// collisionError is a target of a Revision whose ReleaseManager name is
// another app's: app "a-b" in target "c" against app "a" in target "b-c".
type collisionError struct {
	name, app, target string
	rm                *picchuv1alpha1.ReleaseManager
}

func (e *collisionError) Error() string {
	return fmt.Sprintf("app %q in target %q would be named %q, which ReleaseManager %s/%s of app %q in target %q already is; rename the app or the target",
		e.app, e.target, e.name, e.rm.Namespace, e.rm.Name, e.rm.Spec.App, e.rm.Spec.Target)
}

// mirrorStatus copies each target's state, traffic and scale for this tag
// from its ReleaseManager, sets the Ready, Reconciling and Stalled
// conditions from them (SetConditions), and writes the status only when it
// changed: within MirrorInterval when what a person or a GitOps tool acts
// on changed, within ProgressInterval when only the release's progress
// moved, every change within it in one write (mirrorWait).
func (r *Reconciler) mirrorStatus(ctx context.Context, rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager,
	held map[string]*picchuv1alpha1.RevisionHold) (ctrl.Result, error) {
	before := rev.DeepCopy()
	rev.Status.ObservedGeneration = rev.Generation
	rev.Status.Targets = TargetStatuses(rev, rms, held)
	rev.Status.Summary = Summary(rev.Status.Targets)
	SetConditions(rev, time.Now())
	key, now := client.ObjectKeyFromObject(rev), time.Now()
	var rec mirrorRecord
	if v, ok := r.mirrored.Load(key); ok {
		rec = v.(mirrorRecord)
	}
	if equality.Semantic.DeepEqual(before.Status, rev.Status) {
		if !rec.moved.IsZero() {
			// Back to what is written: nothing waits.
			r.mirrored.Store(key, mirrorRecord{written: rec.written})
		}
		return ctrl.Result{}, nil
	}
	wait, rec := r.mirrorWait(&before.Status, &rev.Status, rec, now)
	if wait > 0 {
		r.mirrored.Store(key, rec)
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	if err := r.Client.Status().Patch(ctx, rev, client.MergeFrom(before)); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status of revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	r.mirrored.Store(key, mirrorRecord{written: now})
	return ctrl.Result{}, nil
}

// mirrorRecord is what the controller keeps of a Revision's mirror between
// its runs. It is lost with the process: a new one waits the intervals
// from its own first run, which delays progress by at most one interval.
type mirrorRecord struct {
	// written is when its status was last written; zero when never, by
	// this process.
	written time.Time
	// moved is when its progress was first seen to differ from what is
	// written; zero when it does not.
	moved time.Time
}

// mirrorWait is how long the write of a Revision's status, from before
// (as written) to after, waits at now, and the record to keep meanwhile:
// when what a person or a GitOps tool acts on changed (acted), until
// MirrorInterval has passed since the last write; when only the release's
// progress moved, until ProgressInterval has passed since it first moved,
// so that the moves of the steps within it are written together (the
// trailing edge: a ramp's first step is written once the interval ends,
// with the steps after it), and at least MirrorInterval after the last
// write.
func (r *Reconciler) mirrorWait(before, after *picchuv1alpha1.RevisionStatus, rec mirrorRecord, now time.Time) (time.Duration, mirrorRecord) {
	wait := cmp.Or(r.MirrorInterval, DefaultMirrorInterval) - now.Sub(rec.written)
	if acted(before, after) {
		return max(wait, 0), rec
	}
	if rec.moved.IsZero() {
		rec.moved = now
	}
	return max(wait, cmp.Or(r.ProgressInterval, DefaultProgressInterval)-now.Sub(rec.moved), 0), rec
}

// acted says a Revision's status changed in what a person or a GitOps
// tool acts on: the generation observed, a condition's presence, status or
// reason (kstatus: Ready, Reconciling, Stalled), or a target's presence,
// hold, alerts, pause or ignored rollback. Anything else is the release's
// progress: states, percents, replicas and the messages that say them.
func acted(before, after *picchuv1alpha1.RevisionStatus) bool {
	if before.ObservedGeneration != after.ObservedGeneration || len(before.Conditions) != len(after.Conditions) ||
		len(before.Targets) != len(after.Targets) {
		return true
	}
	for _, c := range after.Conditions {
		b := meta.FindStatusCondition(before.Conditions, c.Type)
		if b == nil || b.Status != c.Status || b.Reason != c.Reason {
			return true
		}
	}
	for i, t := range after.Targets {
		b := before.Targets[i]
		if b.Name != t.Name || !equality.Semantic.DeepEqual(b.Held, t.Held) || !slices.Equal(b.TriggeredAlerts, t.TriggeredAlerts) ||
			b.Paused != t.Paused || b.IgnoredRollback != t.IgnoredRollback {
			return true
		}
	}
	return false
}

// TargetStatuses returns, per ReleaseManager, what it records for the
// Revision's tag, and
// each target held without one (held, by target name). A ReleaseManager
// stalled because its app's namespace or an object it needs is not
// Picchu's holds the build: its Stalled condition is the target's held.
func TargetStatuses(rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager, held map[string]*picchuv1alpha1.RevisionHold) []picchuv1alpha1.RevisionTargetStatus {
	tag := rev.Spec.App.Tag
	out := make([]picchuv1alpha1.RevisionTargetStatus, 0, len(rms)+len(held))
	for target, h := range held {
		out = append(out, picchuv1alpha1.RevisionTargetStatus{Name: target, Held: h})
	}
	for _, rm := range rms {
		ts := picchuv1alpha1.RevisionTargetStatus{Name: rm.Spec.Target, Held: stalledHold(rm)}
		for _, s := range rm.Status.Revisions {
			if s.Tag != tag {
				continue
			}
			ts.State = s.State.Current
			ts.Scale = picchuv1alpha1.RevisionScaleStatus{Current: s.Scale.Current, Desired: s.Scale.Desired, Peak: s.Scale.Peak}
			ts.Release = picchuv1alpha1.RevisionReleaseStatus{CurrentPercent: s.CurrentPercent, PeakPercent: s.PeakPercent,
				WavesLeft: release.WavesLeft(release.State(s.State.Current), int(s.Wave), s.WavePercents, maxPercentIn(rev, rm.Spec.Target))}
			ts.TriggeredAlerts = s.TriggeredAlerts
			ts.Paused = s.Paused != nil
			if s.IgnoredRollback != nil {
				ts.IgnoredRollback = s.IgnoredRollback.Reason
			}
		}
		out = append(out, ts)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// maxPercentIn is the release.max of the Revision's target, 100 when it has
// no such target.
func maxPercentIn(rev *picchuv1alpha1.Revision, target string) int32 {
	for _, t := range rev.Spec.Targets {
		if t.Name == target {
			return release.MaxPercent(t.Release)
		}
	}
	return 100
}

// stalledHold is the hold a ReleaseManager's Stalled condition says all its
// builds are under, or nil.
func stalledHold(rm *picchuv1alpha1.ReleaseManager) *picchuv1alpha1.RevisionHold {
	c := meta.FindStatusCondition(rm.Status.Conditions, picchuv1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue ||
		(c.Reason != picchuv1alpha1.ReasonNotOwned && c.Reason != picchuv1alpha1.ReasonProtectedNamespace &&
			c.Reason != picchuv1alpha1.ReasonNamespaceNotAllowed && c.Reason != picchuv1alpha1.ReasonHostNotAllowed) {
		return nil
	}
	return &picchuv1alpha1.RevisionHold{Reason: c.Reason, Message: c.Message}
}

// Summary is the one-line view of the targets "kubectl get revisions" shows,
// such as "production=releasing 40% staging=released 100%".
func Summary(targets []picchuv1alpha1.RevisionTargetStatus) string {
	parts := make([]string, 0, len(targets))
	for _, t := range targets {
		state := t.State
		if state == "" {
			state = "pending"
		}
		part := fmt.Sprintf("%s=%s %d%%", t.Name, state, t.Release.CurrentPercent)
		if t.Paused {
			part += " paused"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, " ")
}
