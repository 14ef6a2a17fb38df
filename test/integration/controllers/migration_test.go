package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	slothv1 "github.com/slok/sloth/pkg/kubernetes/api/sloth/v1"
	corev1 "k8s.io/api/core/v1"
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

// TestReleaseManager_RemovesTheOriginalsPerBuildServiceLevels writes, on
// every cluster, a Sloth PrometheusServiceLevel per build as the original
// wrote them (labelled with the app, target and tag, without Picchu's
// marker labels) beside one of another app and one the ignore label
// guards. Once the app's own service levels are applied, its per-build
// ones are gone everywhere, with a Migrated event naming each; the
// other app's and the ignored one stay.
func TestReleaseManager_RemovesTheOriginalsPerBuildServiceLevels(t *testing.T) {
	ctx := context.Background()
	const app = "pslmigrate"
	legacy := func(name, app, tag string, ignored bool) *slothv1.PrometheusServiceLevel {
		labels := map[string]string{picchuv1alpha1.LabelApp: app, picchuv1alpha1.LabelTarget: "production", picchuv1alpha1.LabelTag: tag}
		if ignored {
			labels[picchuv1alpha1.LabelIgnore] = ""
		}
		return &slothv1.PrometheusServiceLevel{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: serviceLevelsNamespace, Labels: labels},
			Spec: slothv1.PrometheusServiceLevelSpec{Service: app, SLOs: []slothv1.SLO{{
				Name: "availability", Objective: 99.9,
				SLI: slothv1.SLI{Events: &slothv1.SLIEvents{
					ErrorQuery: fmt.Sprintf(`sum(rate(%s:availability:errors{tag=%q}[{{.window}}]))`, app, tag),
					TotalQuery: fmt.Sprintf(`sum(rate(%s:availability:total{tag=%q}[{{.window}}]))`, app, tag),
				}},
				Alerting: slothv1.Alerting{PageAlert: slothv1.Alert{Disable: true}, TicketAlert: slothv1.Alert{Disable: true}},
			}}},
		}
	}
	stale := legacy(app+"-production-v0-servicelevels", app, "v0", false)
	kept := []*slothv1.PrometheusServiceLevel{
		legacy("pslother-production-v0-servicelevels", "pslother", "v0", false),
		legacy(app+"-production-v00-servicelevels", app, "v00", true),
	}
	for _, target := range env.Targets {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: serviceLevelsNamespace}}
		if err := target.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
		for _, psl := range append([]*slothv1.PrometheusServiceLevel{stale}, kept...) {
			if err := target.Client.Create(ctx, psl.DeepCopy()); err != nil {
				t.Fatalf("%s: %v", target.Name, err)
			}
		}
	}

	config(t, app, "v1")
	if err := env.Delivery.Client.Create(ctx, appRevision(app, "v1", env.Fleet)); err != nil {
		t.Fatal(err)
	}
	for _, target := range env.Targets {
		makeReady(t, target, app, "v1")
	}
	for _, target := range env.Targets {
		kit.Eventually(t, 30*time.Second, target.Name+": the per-build service levels replaced", func() error {
			return errors.Join(
				exists(app, target.Client, &slothv1.PrometheusServiceLevel{}, app+"-production-servicelevels", serviceLevelsNamespace),
				gone(target.Client, &slothv1.PrometheusServiceLevel{}, stale.Name, serviceLevelsNamespace))
		})
		for _, psl := range kept {
			if err := exists(psl.Labels[picchuv1alpha1.LabelApp], target.Client, &slothv1.PrometheusServiceLevel{}, psl.Name, serviceLevelsNamespace); err != nil {
				t.Errorf("%s: %v", target.Name, err)
			}
		}
	}
	kit.Eventually(t, 30*time.Second, "the Migrated event of the per-build service levels", func() error {
		list := &eventsv1.EventList{}
		if err := env.Delivery.Client.List(ctx, list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == app+"-production" && e.Reason == "Migrated" {
				notes = append(notes, e.Note)
			}
		}
		for _, target := range env.Targets {
			want := target.Name + ": PrometheusServiceLevel " + serviceLevelsNamespace + "/" + stale.Name
			if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want) }) {
				return fmt.Errorf("no Migrated event says %q: %q", want, notes)
			}
		}
		return nil
	})
	buildState(t, 30*time.Second, app, "v1", "released")
}
