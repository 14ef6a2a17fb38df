package releasemanager

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/decide/release"
)

// collectGarbage labels the Revisions of the builds garbage collection
// chose "target-deletable.picchu.medium.engineering/<target>=true"; the
// Revision controller deletes a Revision once every target says so. It
// decides from the states recorded by this run, and says when the next
// build expires that it would then collect (release.NextCollection; zero
// for none).
func (r *Reconciler) collectGarbage(ctx context.Context, s *snapshot) (time.Time, error) {
	revs := map[string]*picchuv1alpha1.Revision{}
	for _, inc := range s.incarnations {
		revs[inc.tag] = inc.revision
	}
	// The recorded builds, newest first as the run ordered them.
	recorded := s.rm.Status.Revisions
	builds := make([]release.GCCandidate, len(recorded))
	for i, st := range recorded {
		builds[i] = release.GCCandidate{
			State: release.State(st.State.Current), Created: timeOf(st.RevisionTimestamp), TTL: time.Duration(st.TTL) * time.Second,
		}
	}
	key := picchuv1alpha1.LabelTargetDeletablePrefix + s.rm.Spec.Target
	for i, chosen := range release.Collectable(builds, s.now, r.KeepDone) {
		rev := revs[recorded[i].Tag]
		if !chosen || rev == nil || rev.Labels[key] == "true" {
			continue
		}
		patch := client.MergeFrom(rev.DeepCopy())
		if rev.Labels == nil {
			rev.Labels = map[string]string{}
		}
		rev.Labels[key] = "true"
		if err := r.Client.Patch(ctx, rev, patch); client.IgnoreNotFound(err) != nil {
			return time.Time{}, fmt.Errorf("marking revision %s/%s deletable in %s: %w", rev.Namespace, rev.Name, s.rm.Spec.Target, err)
		}
	}
	next, _ := release.NextCollection(builds, s.now, r.KeepDone)
	return next, nil
}
