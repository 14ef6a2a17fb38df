package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// TestRevision_RollbackStampedWhenReceived: the mutating webhook stamps
// when it received a rollback request, whatever time the client wrote (a
// laptop 10 minutes slow), keeps the stamp when someone rewrites it without
// a new request, and the validating webhook refuses a rollback or promote
// time a year ahead, naming the annotation.
func TestRevision_RollbackStampedWhenReceived(t *testing.T) {
	ctx := context.Background()
	u := object(t, "Revision", revisionJSON(""))
	if err := create(ctx, hookedClient, u); err != nil {
		t.Fatalf("creating revision: %v", err)
	}
	key := client.ObjectKeyFromObject(u)
	rev := &picchuv1alpha1.Revision{}
	patch := func(change func(*picchuv1alpha1.Revision)) error {
		t.Helper()
		if err := hookedClient.Get(ctx, key, rev); err != nil {
			t.Fatal(err)
		}
		before := rev.DeepCopy()
		if rev.Annotations == nil {
			rev.Annotations = map[string]string{}
		}
		change(rev)
		return hookedClient.Patch(ctx, rev, client.MergeFrom(before))
	}
	sent := time.Now()
	slow := picchuv1alpha1.RollbackRequest(sent.Add(-10 * time.Minute))
	if err := patch(func(r *picchuv1alpha1.Revision) { r.Annotations[picchuv1alpha1.AnnotationRollback] = slow }); err != nil {
		t.Fatalf("a rollback from a slow clock: %v", err)
	}
	answered := time.Now()
	stamp := rev.Annotations[picchuv1alpha1.AnnotationRollbackAt]
	received, ok := picchuv1alpha1.ParseRollbackRequest(stamp)
	if !ok || received.Before(sent) || received.After(answered) || rev.Annotations[picchuv1alpha1.AnnotationRollback] != slow {
		t.Fatalf("rollback %q stamped %q; want the request as sent, stamped between %s and %s",
			rev.Annotations[picchuv1alpha1.AnnotationRollback], stamp, sent.UTC().Format(time.RFC3339Nano), answered.UTC().Format(time.RFC3339Nano))
	}
	if err := patch(func(r *picchuv1alpha1.Revision) {
		r.Annotations[picchuv1alpha1.AnnotationRollbackAt] = picchuv1alpha1.RollbackRequest(sent.Add(time.Hour))
	}); err != nil {
		t.Fatalf("rewriting the stamp: %v", err)
	}
	if got := rev.Annotations[picchuv1alpha1.AnnotationRollbackAt]; got != stamp {
		t.Errorf("after a rewrite without a new request: rollback-at %q, want %q kept", got, stamp)
	}

	yearAhead := time.Now().Add(365 * 24 * time.Hour)
	for _, tc := range []struct{ key, value string }{
		{picchuv1alpha1.AnnotationRollback, picchuv1alpha1.RollbackRequest(yearAhead)},
		{picchuv1alpha1.AnnotationPromote, picchuv1alpha1.PromoteRequest(true, yearAhead)},
	} {
		err := patch(func(r *picchuv1alpha1.Revision) { r.Annotations[tc.key] = tc.value })
		if err == nil {
			t.Errorf("%s a year ahead accepted", tc.key)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.annotations["+tc.key+"]: Invalid value") ||
			!strings.Contains(err.Error(), "ahead of Picchu's clock") {
			t.Errorf("%s a year ahead: %v; want Invalid naming the annotation", tc.key, err)
		}
	}
}
