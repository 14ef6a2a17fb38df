package releasemanager

import (
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// DeployStartWait is the longest a build's start of its deploy waits,
// unwritten, for the status write that comes after it: a deploy that
// finishes within it is written once, with the release it passes on to
// (new → deploying → deployed → pendingrelease → releasing), in one
// status write and one event instead of two of each. A deploy that takes
// longer is written when the wait ends, as before but this much later.
const DeployStartWait = 5 * time.Second

// unwritten remembers, per ReleaseManager, a status a run decided and did
// not write: builds that only started their deploy (deployStarts). The
// next run decides from it while the ReleaseManager is the version it was
// decided from. It is lost with the process, and that loses nothing: a
// build's deploy start is what a run decides again from what is written
// (created, or no record of the build), its deploy deadline then counted
// from the new start, at most DeployStartWait later. Its methods are
// safe for concurrent use.
type unwritten struct {
	mu sync.Mutex
	by map[types.NamespacedName]*pending
}

// pending is a status a run decided and did not write yet.
type pending struct {
	// version is the ReleaseManager's resourceVersion it was decided
	// from; status is nil once it was written by anyone since.
	version string
	status  *picchuv1alpha1.ReleaseManagerStatus
	// events are the events of the runs that decided it, unsent: they go
	// with the status.
	events []statusEvent
	// since is when the first of those runs decided it.
	since time.Time
}

// current returns the ReleaseManager a run decides from, and what is
// pending for it: rm with the status a run did not write yet, while rm is
// the version it was decided from. Once anyone wrote it since, rm as it
// is, and only when the first run that did not write decided (a pending
// with no status): the wait counts from then, however often others write
// meanwhile.
func (u *unwritten) current(key types.NamespacedName, rm *picchuv1alpha1.ReleaseManager) (*picchuv1alpha1.ReleaseManager, *pending) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := u.by[key]
	if p == nil {
		return rm, nil
	}
	if p.status == nil || p.version != rm.ResourceVersion {
		p = &pending{since: p.since}
		u.by[key] = p
		return rm, p
	}
	out := rm.DeepCopy()
	out.Status = *p.status.DeepCopy()
	return out, p
}

// keep records p as key's pending status.
func (u *unwritten) keep(key types.NamespacedName, p *pending) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[types.NamespacedName]*pending{}
	}
	u.by[key] = p
}

// forget drops key's pending status: it was written, the ReleaseManager
// is gone, or this replica no longer drives it.
func (u *unwritten) forget(key types.NamespacedName) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.by, key)
}

// deployStartsWait is how long the write of after may wait at now, given
// written (what the API server holds) and since (when the first run that
// did not write it decided, now when none did): DeployStartWait from
// since, when after differs from written only in builds that started
// their deploy (deployStarts); zero when it may not wait.
func deployStartsWait(written, after *picchuv1alpha1.ReleaseManagerStatus, since, now time.Time) time.Duration {
	wait := since.Add(DeployStartWait).Sub(now)
	if wait <= 0 || !deployStarts(written, after) {
		return 0
	}
	return wait
}

// deployStarts says after differs from written only in builds that
// started their deploy since (recorded deploying with no traffic, where
// written has no record of them, or records them created), in what that
// makes of the ReleaseManager's Ready and Reconciling conditions
// (Progressing), in the generation observed, in the clusters recorded
// when every one took the run (an app's first run records them), and in
// replica counts (a view: scaleOnlyWait). Nothing a person, a GitOps tool or a later run
// acts on waits: no traffic, no other build's state, no hold, no alert.
func deployStarts(written, after *picchuv1alpha1.ReleaseManagerStatus) bool {
	w, a := written.DeepCopy(), after.DeepCopy()
	var started []string
	for _, st := range a.Revisions {
		before := statusOfTag(*w, st.Tag)
		if release.State(st.State.Current).IsRollingOut() && st.CurrentPercent == 0 &&
			(before == nil || before.State.Current == "" || release.State(before.State.Current) == release.Created) {
			started = append(started, st.Tag)
		}
	}
	if len(started) == 0 {
		return false
	}
	drop := func(st picchuv1alpha1.ReleaseManagerRevisionStatus) bool { return slices.Contains(started, st.Tag) }
	w.Revisions, a.Revisions = slices.DeleteFunc(w.Revisions, drop), slices.DeleteFunc(a.Revisions, drop)
	for i := range a.Revisions {
		if before := statusOfTag(*w, a.Revisions[i].Tag); before != nil {
			a.Revisions[i].Scale = before.Scale
		}
	}
	if !progressingOnly(w.Conditions, a.Conditions) || !allSynced(a.Clusters) {
		return false
	}
	a.Conditions, a.ObservedGeneration, a.LastUpdated, a.Clusters = w.Conditions, w.ObservedGeneration, w.LastUpdated, w.Clusters
	return sameStatus(w, a)
}

// allSynced says every cluster took the run: a cluster that did not is
// written at once, whatever it was before.
func allSynced(clusters []picchuv1alpha1.ReleaseManagerClusterStatus) bool {
	return !slices.ContainsFunc(clusters, func(c picchuv1alpha1.ReleaseManagerClusterStatus) bool { return !c.Synced || c.Message != "" })
}

// progressingOnly says the conditions after differ from those before only
// in Ready and Reconciling, and in after say the ReleaseManager
// progresses (reason Progressing), as a build that starts its deploy
// makes them.
func progressingOnly(before, after []metav1.Condition) bool {
	other := func(c metav1.Condition) bool {
		return c.Type != picchuv1alpha1.ConditionReady && c.Type != picchuv1alpha1.ConditionReconciling
	}
	for _, c := range after {
		if !other(c) && c.Reason != picchuv1alpha1.ReasonProgressing {
			return false
		}
	}
	ours := func(c metav1.Condition) bool { return !other(c) }
	return equality.Semantic.DeepEqual(slices.DeleteFunc(slices.Clone(before), ours), slices.DeleteFunc(slices.Clone(after), ours))
}

// joinNote adds note to notes, "; "-separated, continuing the path of a
// build that notes leave where note starts: "v2 new → deploying" and
// "v2 deploying → deployed" make "v2 new → deploying → deployed".
func joinNote(notes, note string) string {
	tag, path, ok := strings.Cut(note, " ")
	from, _, more := strings.Cut(path, " → ")
	if ok && more {
		parts := strings.Split(notes, "; ")
		for i, p := range parts {
			if strings.HasPrefix(p, tag+" ") && strings.HasSuffix(p, " → "+from) {
				parts[i] = p + strings.TrimPrefix(path, from)
				return strings.Join(parts, "; ")
			}
		}
	}
	return notes + "; " + note
}
