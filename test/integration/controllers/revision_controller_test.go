package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	revisionctl "github.com/medium/picchu/controllers/revision"
	"github.com/medium/picchu/test/kit"
)

// revision is build tag of app shop named name, labelled with labels
// alone, of image shop:tag, in targets.
func revision(name, tag string, labels map[string]string, targets ...picchuv1alpha1.RevisionTarget) *picchuv1alpha1.Revision {
	return env.Apps().Revision("shop", tag, kit.Labels(labels), kit.Image("shop:"+tag), kit.Targets(targets...),
		kit.With(func(rev *picchuv1alpha1.Revision) { rev.Name = name }))
}

// TestRevisionReconciler_ReleaseManagersLabelsAndStatus applies Revisions of
// one app to two targets and checks the ReleaseManagers, the Revision labels
// (including on a Revision created with none) and the mirrored status.
func TestRevisionReconciler_ReleaseManagersLabelsAndStatus(t *testing.T) {
	ctx := context.Background()
	c := env.Delivery.Client
	// Fleets without clusters: this test is about the Revision controller.
	production := picchuv1alpha1.RevisionTarget{Name: "production", Fleet: "nowhere"}
	staging := picchuv1alpha1.RevisionTarget{Name: "staging", Fleet: "nowhere-staging"}

	// The ReleaseManagers are watched from before they exist: each is
	// created with the finalizer its controller keeps, which costs no
	// write of its own.
	watcher, err := client.NewWithWatch(env.Delivery.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rmWatch, err := watcher.Watch(ctx, &picchuv1alpha1.ReleaseManagerList{}, client.InNamespace(env.Namespace),
		client.MatchingLabels{picchuv1alpha1.LabelApp: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer rmWatch.Stop()
	v1 := revision("shop-v1", "v1", nil, production, staging)
	if err := c.Create(ctx, v1); err != nil {
		t.Fatal(err)
	}
	for created := map[string]bool{}; len(created) < 2; {
		select {
		case e := <-rmWatch.ResultChan():
			if e.Type == watch.Error {
				t.Fatalf("watching the release managers of shop: %v", e.Object)
			}
			rm, ok := e.Object.(*picchuv1alpha1.ReleaseManager)
			if !ok || created[rm.Name] {
				continue
			}
			created[rm.Name] = true
			if e.Type != watch.Added || !slices.Equal(rm.Finalizers, []string{picchuv1alpha1.FinalizerReleaseManager}) {
				t.Errorf("release manager %s first seen %s with finalizers %v, want added with %s",
					rm.Name, e.Type, rm.Finalizers, picchuv1alpha1.FinalizerReleaseManager)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the release managers of shop were not created within 20s")
		}
	}
	v2 := revision("shop-v2", "v2", map[string]string{"team": "checkout", picchuv1alpha1.LabelFleetPrefix + "old": ""}, production)
	if err := c.Create(ctx, v2); err != nil {
		t.Fatal(err)
	}

	for _, target := range []picchuv1alpha1.RevisionTarget{production, staging} {
		rm := &picchuv1alpha1.ReleaseManager{}
		kit.Eventually(t, 20*time.Second, "release manager shop-"+target.Name, func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "shop-" + target.Name}, rm)
		})
		wantLabels := map[string]string{picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: target.Name, picchuv1alpha1.LabelFleet: target.Fleet}
		delete(rm.Labels, picchuv1alpha1.LabelIgnore)
		if !maps.Equal(rm.Labels, wantLabels) || rm.Spec.App != "shop" || rm.Spec.Target != target.Name || rm.Spec.Fleet != target.Fleet {
			t.Errorf("release manager %s: labels %v spec %+v", rm.Name, rm.Labels, rm.Spec)
		}
	}
	rms := &picchuv1alpha1.ReleaseManagerList{}
	if err := c.List(ctx, rms, client.InNamespace(env.Namespace), client.MatchingLabels{picchuv1alpha1.LabelApp: "shop"}); err != nil || len(rms.Items) != 2 {
		t.Fatalf("%d release managers for shop (%v), want one per target: 2", len(rms.Items), err)
	}

	wantLabels := map[string]map[string]string{
		"shop-v1": {picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelFleetPrefix + "nowhere": "", picchuv1alpha1.LabelFleetPrefix + "nowhere-staging": ""},
		"shop-v2": {picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelFleetPrefix + "nowhere": "", "team": "checkout"},
	}
	for name, want := range wantLabels {
		kit.Eventually(t, 20*time.Second, "labels of "+name, func() error {
			rev := &picchuv1alpha1.Revision{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, rev); err != nil {
				return err
			}
			if !maps.Equal(rev.Labels, want) {
				return fmt.Errorf("labels %v, want %v", rev.Labels, want)
			}
			return nil
		})
	}

	// Picchu's release record for v1 in production shows up in v1's
	// status. The record is written here, with the release manager
	// controller told to leave this one alone.
	key := client.ObjectKey{Namespace: env.Namespace, Name: "shop-production"}
	if err := env.Apps().Record(ctx, "shop", "production", func(st *picchuv1alpha1.ReleaseManagerStatus) {
		st.Revisions = []picchuv1alpha1.ReleaseManagerRevisionStatus{{
			Tag: "v1", State: picchuv1alpha1.ReleaseManagerRevisionStateStatus{Current: "releasing", Target: "released"},
			CurrentPercent: 40, PeakPercent: 40, ReleaseEligible: true,
			Scale: picchuv1alpha1.ReleaseManagerRevisionScaleStatus{Current: 3, Desired: 4, Peak: 3},
		}}
	}); err != nil {
		t.Fatal(err)
	}
	kit.Eventually(t, 20*time.Second, "v1's status mirrors its release managers", func() error {
		rev := &picchuv1alpha1.Revision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(v1), rev); err != nil {
			return err
		}
		if rev.Status.Summary != "production=releasing 40% staging=deploying 0%" {
			return fmt.Errorf("summary %q", rev.Status.Summary)
		}
		prod := rev.Status.Targets[0]
		if prod.Name != "production" || prod.Release.CurrentPercent != 40 || prod.Release.PeakPercent != 40 ||
			prod.Scale != (picchuv1alpha1.RevisionScaleStatus{Current: 3, Desired: 4, Peak: 3}) {
			return fmt.Errorf("production status %+v", prod)
		}
		if rev.Status.ObservedGeneration != rev.Generation {
			return fmt.Errorf("observedGeneration %d, generation %d", rev.Status.ObservedGeneration, rev.Generation)
		}
		return nil
	})

	// A burst of changes to the release record's progress is mirrored
	// together: one write of v1's status, the last change included. v1's
	// writes are counted from a watch of v1 alone.
	mirrored := &picchuv1alpha1.Revision{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(v1), mirrored); err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(ctx, &picchuv1alpha1.RevisionList{}, client.InNamespace(env.Namespace),
		client.MatchingFields{"metadata.name": v1.Name}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: mirrored.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	for percent := int32(41); percent <= 50; percent++ {
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			rm := &picchuv1alpha1.ReleaseManager{}
			if err := c.Get(ctx, key, rm); err != nil {
				return err
			}
			rm.Status.Revisions[0].CurrentPercent, rm.Status.Revisions[0].PeakPercent = percent, percent
			return c.Status().Update(ctx, rm)
		}); err != nil {
			t.Fatal(err)
		}
	}
	burst := time.Since(start)
	writes := 0
	for done := false; !done; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch of v1 ended")
			}
			rev, isRev := e.Object.(*picchuv1alpha1.Revision)
			if !isRev || equality.Semantic.DeepEqual(rev.Status, mirrored.Status) {
				continue
			}
			writes++
			mirrored = rev
			done = rev.Status.Summary == "production=releasing 50% staging=deploying 0%"
		case <-time.After(20 * time.Second):
			t.Fatalf("v1's status does not mirror the last change: %q", mirrored.Status.Summary)
		}
	}
	// Progress alone: the burst is written once its first change has
	// waited the progress interval, every change since with it; one write
	// more for each interval the burst lasted.
	if most := 1 + int(burst/revisionctl.DefaultProgressInterval); writes > most {
		t.Errorf("%d writes of v1's status for 10 changes of its release record in %s, want at most %d (one per %s)",
			writes, burst.Round(time.Millisecond), most, revisionctl.DefaultProgressInterval)
	}
}
