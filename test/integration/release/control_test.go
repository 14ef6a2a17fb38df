package release_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// annotate sets annotations of a Revision, as kubectl annotate would.
func annotate(t *testing.T, rev *picchuv1alpha1.Revision, kv ...string) {
	t.Helper()
	ctx := context.Background()
	if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rev), rev); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(rev.DeepCopy())
	for i := 0; i+1 < len(kv); i += 2 {
		rev.Annotations[kv[i]] = kv[i+1]
	}
	if err := env.Delivery.Client.Patch(ctx, rev, patch); err != nil {
		t.Fatalf("annotating %s: %v", rev.Name, err)
	}
}

// statusOf is what app's ReleaseManager records of build tag.
func statusOf(t *testing.T, app, tag string) (picchuv1alpha1.ReleaseManagerRevisionStatus, error) {
	t.Helper()
	rm, err := releaseManager(context.Background(), app)
	if err != nil {
		return picchuv1alpha1.ReleaseManagerRevisionStatus{}, err
	}
	for _, st := range rm.Status.Revisions {
		if st.Tag == tag {
			return st, nil
		}
	}
	return picchuv1alpha1.ReleaseManagerRevisionStatus{}, fmt.Errorf("no status of %s", tag)
}

// TestRollback_OrderedByTheTimeReceivedNeverAhead steers app "steered",
// with v1 and then v2 released, as the operator runs without the webhooks
// (this suite serves none: they are down, or not installed). A rollback to
// v1 written a year ahead is ignored, said so in the ReleaseManager's and
// the Revision's status, and holds back no build: v2 stays released, and
// v3, applied after it, is released. Then a rollback to v2 from a laptop
// 10 minutes slow, which wrote a time before v3 was created, rolls v3 back
// as it is ordered by the time the webhook stamped when it received it.
func TestRollback_OrderedByTheTimeReceivedNeverAhead(t *testing.T) {
	const app = "steered"
	const delay = time.Second
	v1 := create(t, build{app: app, tag: "v1", commit: 1, delay: delay})
	state(t, time.Minute, app, "v1", "released")
	create(t, build{app: app, tag: "v2", commit: 2, delay: delay})
	state(t, time.Minute, app, "v2", "released")

	annotate(t, v1, picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(time.Now().Add(365*24*time.Hour)))
	kit.Eventually(t, 30*time.Second, "v1's rollback a year ahead ignored", func() error {
		st, err := statusOf(t, app, "v1")
		if err != nil {
			return err
		}
		if st.IgnoredRollback == nil || !strings.Contains(st.IgnoredRollback.Reason, "ahead of Picchu's clock") {
			return fmt.Errorf("ignoredRollback %+v, rolledBack %q", st.IgnoredRollback, st.RolledBack)
		}
		return nil
	})
	kit.Eventually(t, 30*time.Second, "v1's Revision says its rollback is ignored", func() error {
		if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(v1), v1); err != nil {
			return err
		}
		if len(v1.Status.Targets) != 1 || !strings.Contains(v1.Status.Targets[0].IgnoredRollback, "ahead of Picchu's clock") {
			return fmt.Errorf("status.targets %+v", v1.Status.Targets)
		}
		return nil
	})
	if st, err := statusOf(t, app, "v2"); err != nil || st.State.Current != "released" || !st.ReleaseEligible {
		t.Fatalf("v2 after the rollback a year ahead: %+v, %v; want released and eligible", st, err)
	}
	v3 := create(t, build{app: app, tag: "v3", commit: 3, delay: delay})
	state(t, time.Minute, app, "v3", "released")
	state(t, 30*time.Second, app, "v2", "retired")

	// What the webhook does for a request received now: stamp it.
	slow := v3.CreationTimestamp.Add(-10 * time.Minute)
	v2 := &picchuv1alpha1.Revision{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: app + "-v2"}, v2); err != nil {
		t.Fatal(err)
	}
	annotate(t, v2, picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(slow),
		picchuv1alpha1.AnnotationRollbackAt, picchuv1alpha1.RollbackRequest(time.Now()))
	state(t, time.Minute, app, "v3", "retired")
	if st := state(t, time.Minute, app, "v2", "released"); st.RolledBack == "" {
		t.Errorf("v2 released again, but its status does not record the rollback it acted on")
	}
}
