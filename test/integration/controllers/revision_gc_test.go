package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// relabel sets one label of the Revision and, in the same update, flips
// spec.ignoreSLOs so that the generation moves; it returns the new
// generation, which the Revision controller records once it has reconciled
// this version (or a newer one).
func relabel(t *testing.T, key client.ObjectKey, label, value string) int64 {
	t.Helper()
	ctx := context.Background()
	var gen int64
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(ctx, key, rev); err != nil {
			return err
		}
		rev.Labels[label] = value
		rev.Spec.IgnoreSLOs = !rev.Spec.IgnoreSLOs
		if err := env.Delivery.Client.Update(ctx, rev); err != nil {
			return err
		}
		gen = rev.Generation
		return nil
	}); err != nil {
		t.Fatalf("labelling %s %s=%s: %v", key, label, value, err)
	}
	return gen
}

// reconciledAndKept waits until the Revision controller has reconciled
// generation gen of the Revision, and checks the Revision still exists.
func reconciledAndKept(t *testing.T, key client.ObjectKey, gen int64, what string) {
	t.Helper()
	kit.Eventually(t, 20*time.Second, "revision controller reconciled "+what, func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := env.Delivery.Client.Get(context.Background(), key, rev); err != nil {
			if apierrors.IsNotFound(err) {
				t.Fatalf("%s: revision deleted", what)
			}
			return err
		}
		if rev.Status.ObservedGeneration < gen {
			return fmt.Errorf("observedGeneration %d, want %d", rev.Status.ObservedGeneration, gen)
		}
		return nil
	})
}

// TestRevisionReconciler_DeletesWhenEveryTargetIsDeletable deletes a
// Revision only once each of its targets is labelled deletable with "true".
func TestRevisionReconciler_DeletesWhenEveryTargetIsDeletable(t *testing.T) {
	ctx := context.Background()
	c := env.Delivery.Client
	rev := appRevision("gc-delete", "v1", "nowhere")
	staging := rev.Spec.Targets[0]
	staging.Name = "staging"
	rev.Spec.Targets = append(rev.Spec.Targets, staging)
	if err := c.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(rev)
	production := picchuv1alpha1.LabelTargetDeletablePrefix + "production"
	stagingLabel := picchuv1alpha1.LabelTargetDeletablePrefix + "staging"

	gen := relabel(t, key, production, "true")
	reconciledAndKept(t, key, gen, "with only production deletable")

	gen = relabel(t, key, stagingLabel, "false")
	reconciledAndKept(t, key, gen, "with staging deletable=false")

	relabel(t, key, stagingLabel, "true")
	kit.Eventually(t, 20*time.Second, "revision deleted once every target is deletable", func() error {
		err := c.Get(ctx, key, &picchuv1alpha1.Revision{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}

// TestRevisionReconciler_FailsARevisionThatTimedOut fails a Revision whose
// build a ReleaseManager records as timing out, and says why.
func TestRevisionReconciler_FailsARevisionThatTimedOut(t *testing.T) {
	ctx := context.Background()
	c := env.Delivery.Client
	rev := appRevision("gc-timeout", "v1", "nowhere")
	if err := c.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: env.Namespace, Name: "gc-timeout-production"}
	kit.Eventually(t, 20*time.Second, "release manager "+key.Name, func() error {
		return c.Get(ctx, key, &picchuv1alpha1.ReleaseManager{})
	})
	// The release manager controller is told to leave this one alone, so
	// that the status written here stays.
	if err := env.Apps().Record(ctx, "gc-timeout", "production", func(st *picchuv1alpha1.ReleaseManagerStatus) {
		st.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{
			Tag:   "v1",
			State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: "timingout", Target: "timingout"},
		}}
	}); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 20*time.Second, "revision failed for timing out", func() error {
		got := &picchuv1alpha1.Revision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(rev), got); err != nil {
			return err
		}
		if !got.Spec.Failed {
			return fmt.Errorf("spec.failed is false")
		}
		if r := got.Annotations[picchuv1alpha1.AnnotationFailedReason]; r != "timed out in production" {
			return fmt.Errorf("failed reason %q", r)
		}
		return nil
	})
}
