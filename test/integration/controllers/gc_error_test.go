package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// refuseDeletable makes the delivery API server refuse to label app's
// Revisions deletable in production, as a cluster's own policy could, and
// returns what lifts the refusal once the API server enforces it: a policy
// takes a moment to reach its admission, and a run that marked a build
// deletable meanwhile would pass.
func refuseDeletable(t *testing.T, app string) (lift func()) {
	t.Helper()
	name := "refuse-deletable-" + app
	label := picchuv1alpha1.LabelTargetDeletablePrefix + "production"
	lift = kit.AdmissionPolicy(t, env.Delivery.Client, name, admissionregistrationv1.RuleWithOperations{
		// Creates too, so that a dry run shows when it is enforced.
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{picchuv1alpha1.GroupVersion.Group},
			APIVersions: []string{"*"}, Resources: []string{"revisions"}},
	}, admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("object.spec.app.name != %q || !has(object.metadata.labels) || !(%q in object.metadata.labels)", app, label),
		Message:    "revisions of " + app + " stay",
	})
	probe := appRevision(app, "probe", env.Fleet)
	probe.Labels[label] = "true"
	kit.Eventually(t, 30*time.Second, "the policy refusing deletable revisions of "+app, func() error {
		err := env.Delivery.Client.Create(context.Background(), probe.DeepCopy(), client.DryRunAll)
		if err == nil || !strings.Contains(err.Error(), "revisions of "+app+" stay") {
			return fmt.Errorf("a dry run of a deletable revision: %v", err)
		}
		return nil
	})
	return lift
}

// TestReleaseManager_AFailedGarbageCollectionHoldsNoRelease makes the
// delivery API server refuse to mark an app's failed, expired build
// deletable: the ReleaseManager says so in a warning event naming the
// Revision, its release goes on (the newer build is released), and once
// the refusal is lifted the next run collects the build.
func TestReleaseManager_AFailedGarbageCollectionHoldsNoRelease(t *testing.T) {
	ctx := context.Background()
	const app = "gcstuck"
	lift := refuseDeletable(t, app)
	config(t, app, "v1")
	config(t, app, "v2")
	v1, v2 := appRevision(app, "v1", env.Fleet), appRevision(app, "v2", env.Fleet)
	v1.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-01T10:00:00Z"}
	v2.Annotations = map[string]string{picchuv1alpha1.AnnotationGitCommitterTimestamp: "2026-11-02T10:00:00Z"}
	// v1 is aborted and expires at once: garbage as soon as it has failed.
	v1.Spec.Failed = true
	v1.Spec.Targets[0].Release.TTL = 1
	for _, rev := range []*picchuv1alpha1.Revision{v1, v2} {
		if err := env.Delivery.Client.Create(ctx, rev); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v2")
	}
	kit.Eventually(t, 30*time.Second, "a warning that the garbage was not collected", func() error {
		events := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, events, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == app+"-production" && e.Reason == "GarbageCollectionFailed" && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Note, app+"-v1") {
				return nil
			}
		}
		return fmt.Errorf("no GarbageCollectionFailed event among %d", len(events.Items))
	})
	buildState(t, 30*time.Second, app, "v2", "released")

	lift()
	// Any run collects it now: a change of the ReleaseManager's annotations
	// brings one, and the policy's removal may take a moment to reach the
	// API server.
	pokes := 0
	kit.Eventually(t, 30*time.Second, "v1 collected", func() error {
		err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(v1), &picchuv1alpha1.Revision{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		pokes++
		poke(t, app, pokes)
		return fmt.Errorf("still there (%v)", err)
	})
}
