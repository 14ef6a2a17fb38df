package admission_test

import (
	"context"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestRevision_ControlNamesWhoAsked: the mutating webhook names the
// request's user in control-by when a pause, abort or other control
// changes, and keeps who it named when someone else writes it.
func TestRevision_ControlNamesWhoAsked(t *testing.T) {
	ctx := context.Background()
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(hookedConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
		c, err := client.New(cfg, client.Options{Scheme: hookedClient.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	u := object(t, "Revision", revisionJSON(""))
	if err := create(ctx, hookedClient, u); err != nil {
		t.Fatalf("creating revision: %v", err)
	}
	rev := &picchuv1alpha1.Revision{}
	key := client.ObjectKeyFromObject(u)
	update := func(c client.Client, change func(*picchuv1alpha1.Revision)) string {
		t.Helper()
		if err := hookedClient.Get(ctx, key, rev); err != nil {
			t.Fatal(err)
		}
		before := rev.DeepCopy()
		change(rev)
		if err := c.Patch(ctx, rev, client.MergeFrom(before)); err != nil {
			t.Fatalf("patching revision: %v", err)
		}
		return rev.Annotations[picchuv1alpha1.AnnotationControlBy]
	}
	if by := update(as("alice"), func(r *picchuv1alpha1.Revision) {
		r.Annotations = map[string]string{picchuv1alpha1.AnnotationPause: "now"}
	}); by != "alice" {
		t.Errorf("after alice paused: control-by %q, want alice", by)
	}
	if by := update(as("mallory"), func(r *picchuv1alpha1.Revision) {
		r.Annotations[picchuv1alpha1.AnnotationControlBy] = "mallory-says-bob"
	}); by != "alice" {
		t.Errorf("after mallory rewrote it: control-by %q, want alice", by)
	}
	if by := update(as("bob"), func(r *picchuv1alpha1.Revision) {
		r.Spec.Failed = true
		r.Annotations[picchuv1alpha1.AnnotationFailedReason] = "aborted: bad build"
	}); by != "bob" {
		t.Errorf("after bob aborted: control-by %q, want bob", by)
	}
}
