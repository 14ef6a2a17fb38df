package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// app is what the delivery cluster holds of one app.
type app struct {
	name string
	// revisions are its builds, oldest first.
	revisions []picchuv1alpha1.Revision
	// managers are its ReleaseManagers, by target.
	managers []picchuv1alpha1.ReleaseManager
}

// errNoApp says an app has nothing in the namespace.
var errNoApp = errors.New("it has no Revision and no ReleaseManager")

// loadApp reads the Revisions and ReleaseManagers of app name.
func (s *session) loadApp(ctx context.Context, name string) (*app, error) {
	revs := &picchuv1alpha1.RevisionList{}
	err := s.client.List(ctx, revs, client.InNamespace(s.namespace), client.MatchingFields{picchuv1alpha1.RevisionAppField: name})
	if apierrors.IsBadRequest(err) {
		// An API server without selectable fields: the app label.
		err = s.client.List(ctx, revs, client.InNamespace(s.namespace), client.MatchingLabels{picchuv1alpha1.LabelApp: name})
	}
	if err != nil {
		return nil, fmt.Errorf("reading the revisions of app %q in namespace %q: %w", name, s.namespace, err)
	}
	rms, err := s.listManagers(ctx)
	if err != nil {
		return nil, err
	}
	a := gather(s.namespace, name, revs.Items, rms)
	if a == nil {
		return nil, fmt.Errorf("app %q not found in namespace %q: %w", name, s.namespace, errNoApp)
	}
	return a, nil
}

// gather is app name of namespace from revs and rms, which may hold other
// apps' too: its Revisions oldest first, its ReleaseManagers by target; nil
// when it has none of either.
func gather(namespace, name string, revs []picchuv1alpha1.Revision, rms []picchuv1alpha1.ReleaseManager) *app {
	a := &app{name: name}
	for _, rev := range revs {
		if rev.Namespace == namespace && rev.Spec.App.Name == name {
			a.revisions = append(a.revisions, rev)
		}
	}
	slices.SortStableFunc(a.revisions, compareRevisions)
	for _, rm := range rms {
		if rm.Namespace == namespace && rm.Spec.App == name {
			a.managers = append(a.managers, rm)
		}
	}
	slices.SortStableFunc(a.managers, func(x, y picchuv1alpha1.ReleaseManager) int { return cmp.Compare(x.Spec.Target, y.Spec.Target) })
	if len(a.revisions) == 0 && len(a.managers) == 0 {
		return nil
	}
	return a
}

// listManagers reads every ReleaseManager of the namespace, by app and target.
func (s *session) listManagers(ctx context.Context) ([]picchuv1alpha1.ReleaseManager, error) {
	list := &picchuv1alpha1.ReleaseManagerList{}
	if err := s.client.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return nil, fmt.Errorf("reading the release managers of namespace %q: %w", s.namespace, err)
	}
	slices.SortFunc(list.Items, func(a, b picchuv1alpha1.ReleaseManager) int {
		return cmp.Or(cmp.Compare(a.Spec.App, b.Spec.App), cmp.Compare(a.Spec.Target, b.Spec.Target), cmp.Compare(a.Name, b.Name))
	})
	return list.Items, nil
}

// events reads the Events of the app's Revisions and ReleaseManagers, oldest first.
func (s *session) events(ctx context.Context, a *app) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	if err := s.client.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return nil, fmt.Errorf("reading the events of namespace %q: %w", s.namespace, err)
	}
	return a.eventsAmong(list.Items), nil
}

// eventsAmong are those of events about the app's Revisions and
// ReleaseManagers, oldest first.
func (a *app) eventsAmong(events []corev1.Event) []corev1.Event {
	uids := map[types.UID]bool{}
	names := map[string]bool{}
	for _, rev := range a.revisions {
		uids[rev.UID] = true
		names["Revision/"+rev.Name] = true
	}
	for _, rm := range a.managers {
		uids[rm.UID] = true
		names["ReleaseManager/"+rm.Name] = true
	}
	var out []corev1.Event
	for _, e := range events {
		o := e.InvolvedObject
		if uids[o.UID] || (o.UID == "" && names[o.Kind+"/"+o.Name]) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b corev1.Event) int {
		return cmp.Or(eventTime(a).Compare(eventTime(b)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// eventTime is when an Event was last seen.
func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// compareRevisions orders Revisions oldest first: by creation, then name.
func compareRevisions(a, b picchuv1alpha1.Revision) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
}

// targets are the names of the app's targets: those of its ReleaseManagers
// and of its Revisions, sorted.
func (a *app) targets() []string {
	var names []string
	for _, rm := range a.managers {
		names = append(names, rm.Spec.Target)
	}
	for _, rev := range a.revisions {
		for _, t := range rev.Spec.Targets {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// manager is the ReleaseManager of target, or nil.
func (a *app) manager(target string) *picchuv1alpha1.ReleaseManager {
	for i := range a.managers {
		if a.managers[i].Spec.Target == target {
			return &a.managers[i]
		}
	}
	return nil
}

// revision is the Revision of tag (the newest when several), or nil.
func (a *app) revision(tag string) *picchuv1alpha1.Revision {
	for i := len(a.revisions) - 1; i >= 0; i-- {
		if a.revisions[i].Spec.App.Tag == tag {
			return &a.revisions[i]
		}
	}
	return nil
}

// build is one build of an app in one target: its Revision and its record
// in the target's ReleaseManager, either of which may be missing.
type build struct {
	tag      string
	revision *picchuv1alpha1.Revision
	record   *picchuv1alpha1.ReleaseManagerRevisionStatus
	// mirror is the Revision's status for the target, read when the
	// ReleaseManager has no record of the build yet.
	mirror  *picchuv1alpha1.RevisionTargetStatus
	spec    *picchuv1alpha1.RevisionTarget
	created time.Time
	name    string
}

// builds are the builds of the app in target, newest first.
func (a *app) builds(target string) []build {
	var out []build
	seen := map[string]bool{}
	if rm := a.manager(target); rm != nil {
		for i := range rm.Status.Revisions {
			rec := &rm.Status.Revisions[i]
			b := build{tag: rec.Tag, record: rec, revision: a.revision(rec.Tag), name: rec.Tag}
			if rec.RevisionTimestamp != nil {
				b.created = rec.RevisionTimestamp.Time
			}
			seen[rec.Tag] = true
			out = append(out, b)
		}
	}
	for i := range a.revisions {
		rev := &a.revisions[i]
		if seen[rev.Spec.App.Tag] || targetSpec(rev, target) == nil {
			continue
		}
		seen[rev.Spec.App.Tag] = true
		out = append(out, build{tag: rev.Spec.App.Tag, revision: rev})
	}
	for i := range out {
		b := &out[i]
		if b.revision == nil {
			continue
		}
		b.created, b.name = b.revision.CreationTimestamp.Time, b.revision.Name
		b.spec = targetSpec(b.revision, target)
		for j := range b.revision.Status.Targets {
			if b.revision.Status.Targets[j].Name == target {
				b.mirror = &b.revision.Status.Targets[j]
			}
		}
	}
	slices.SortStableFunc(out, func(x, y build) int {
		return cmp.Or(y.created.Compare(x.created), cmp.Compare(y.name, x.name))
	})
	return out
}

func targetSpec(rev *picchuv1alpha1.Revision, target string) *picchuv1alpha1.RevisionTarget {
	for i := range rev.Spec.Targets {
		if rev.Spec.Targets[i].Name == target {
			return &rev.Spec.Targets[i]
		}
	}
	return nil
}

// state is the build's state in the target, "" when unknown.
func (b build) state() string {
	switch {
	case b.record != nil:
		return b.record.State.Current
	case b.mirror != nil:
		return b.mirror.State
	}
	return ""
}

func (b build) percent() int32 {
	switch {
	case b.record != nil:
		return b.record.CurrentPercent
	case b.mirror != nil:
		return b.mirror.Release.CurrentPercent
	}
	return 0
}

func (b build) peak() int32 {
	switch {
	case b.record != nil:
		return b.record.PeakPercent
	case b.mirror != nil:
		return b.mirror.Release.PeakPercent
	}
	return 0
}

func (b build) pods() (current, desired int32) {
	switch {
	case b.record != nil:
		return b.record.Scale.Current, b.record.Scale.Desired
	case b.mirror != nil:
		return b.mirror.Scale.Current, b.mirror.Scale.Desired
	}
	return 0, 0
}

func (b build) alerts() []string {
	switch {
	case b.record != nil:
		return b.record.TriggeredAlerts
	case b.mirror != nil:
		return b.mirror.TriggeredAlerts
	}
	return nil
}

// paused says the build is paused, or a pause of it is asked for.
func (b build) paused() bool {
	if b.record != nil && b.record.Paused != nil {
		return true
	}
	if b.mirror != nil && b.mirror.Paused {
		return true
	}
	_, asked := annotation(b.revision, picchuv1alpha1.AnnotationPause)
	return asked
}

// hasTraffic says some cluster routes traffic to the build.
func (b build) hasTraffic() bool {
	if b.percent() > 0 {
		return true
	}
	if b.record != nil {
		for _, c := range b.record.Clusters {
			if c.Percent > 0 {
				return true
			}
		}
	}
	return false
}

func annotation(rev *picchuv1alpha1.Revision, key string) (string, bool) {
	if rev == nil {
		return "", false
	}
	v, ok := rev.Annotations[key]
	return v, ok
}
