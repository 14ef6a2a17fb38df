package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/test/kit"
)

// TestReleaseManager_MigratesTheOriginalsDatadogCanaryState gives a build
// the state canaryingdatadog, as the original stored it before it removed
// its Datadog canary states: the ReleaseManager reads it as canarying,
// says so in an event, and the build goes on to be released (the state
// held it for good before: a state this version did not handle).
func TestReleaseManager_MigratesTheOriginalsDatadogCanaryState(t *testing.T) {
	ctx := context.Background()
	const app = "ddcanary"
	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	buildState(t, 30*time.Second, app, "v1", "released")

	// As the original left it: taken from the operator (the ignore label)
	// while the state is written, then given back.
	if err := env.Apps().Record(ctx, app, "production", func(st *picchuv1alpha1.ReleaseManagerStatus) {
		for i := range st.Revisions {
			if st.Revisions[i].Tag == "v1" {
				st.Revisions[i].State.Current, st.Revisions[i].State.Target = "canaryingdatadog", "canaryingdatadog"
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	rm := &picchuv1alpha1.ReleaseManager{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: app + "-production"}}
	if err := kit.Update(ctx, env.Delivery.Client, rm, func(rm *picchuv1alpha1.ReleaseManager) { delete(rm.Labels, picchuv1alpha1.LabelIgnore) }); err != nil {
		t.Fatal(err)
	}

	kit.Eventually(t, 30*time.Second, "the Migrated event of v1", func() error {
		list := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Name == rm.Name && e.Reason == "Migrated" && strings.Contains(e.Note, "v1 was recorded in canaryingdatadog") {
				return nil
			}
		}
		return fmt.Errorf("no Migrated event names v1 and canaryingdatadog")
	})
	got := buildState(t, 30*time.Second, app, "v1", "released")
	if c := condition(got, picchuv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("stalled: %s: %s", c.Reason, c.Message)
	}
}
