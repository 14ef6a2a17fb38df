package admission_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

// TestUndecodableObjects_AreReportedNotFatal stores, under older CRDs
// without the rules that now keep them out, a Revision whose delay
// overflows and a ReleaseManager whose release record holds a timestamp Go
// cannot read. It then installs the current CRDs, as an upgrade does, and
// runs what Picchu runs: the informers' List, then the whole operator. The
// lists succeed, each bad object is reported on itself (Stalled, naming
// the value, and an event) and left as stored, and the good Revision is
// delivered: the operator does not stop.
func TestUndecodableObjects_AreReportedNotFatal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	current := currentCRDs(t)
	env := startWithCRDs(ctx, t, loosened(current))
	c := env.Delivery.Client

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "picchu"}}); err != nil {
		t.Fatal(err)
	}
	good := object(t, "Revision", revisionJSON(""))
	bad := object(t, "Revision", revisionJSON(`"release": {"geometricScaling": {"delay": "2562048h"}}`))
	brokenRM := object(t, "ReleaseManager", `{"app": "broken", "target": "production", "fleet": "production"}`)
	for _, obj := range []*unstructured.Unstructured{good, bad, brokenRM} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s under the older CRDs: %v", obj.GetName(), err)
		}
	}
	record := []any{map[string]any{"tag": "v1", "currentPercent": int64(100), "peakPercent": int64(100), "releaseEligible": true,
		"state": map[string]any{"current": "released", "target": "released", "lastUpdated": "2026-11-21t10:00:00z"}}}
	if err := unstructured.SetNestedSlice(brokenRM.Object, record, "status", "revisions"); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, brokenRM); err != nil {
		t.Fatalf("writing the release record under the older CRD: %v", err)
	}

	upgrade(ctx, t, env, current)

	t.Run("the informers list every object", func(t *testing.T) {
		informers, err := cache.New(env.Delivery.Config, cache.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		cacheCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() { _ = informers.Start(cacheCtx) }()
		if !informers.WaitForCacheSync(cacheCtx) {
			t.Fatal("the cache did not start")
		}
		revs := &picchuv1alpha1.RevisionList{}
		if err := listWithin(cacheCtx, informers, revs); err != nil {
			t.Fatalf("listing revisions from the cache: %v", err)
		}
		rms := &picchuv1alpha1.ReleaseManagerList{}
		if err := listWithin(cacheCtx, informers, rms); err != nil {
			t.Fatalf("listing release managers from the cache: %v", err)
		}
		byName := map[string]*picchuv1alpha1.Revision{}
		for i := range revs.Items {
			byName[revs.Items[i].Name] = &revs.Items[i]
		}
		if r := byName[good.GetName()]; r == nil || r.DecodeError() != nil || r.Spec.App.Name != "demo" {
			t.Errorf("good revision listed as %+v", r)
		}
		checkReported(t, byName[bad.GetName()], "spec.targets[0].release.geometricScaling.delay", `invalid duration "2562048h"`)
		if len(rms.Items) != 1 {
			t.Fatalf("listed %d release managers, want 1", len(rms.Items))
		}
		checkReported(t, &rms.Items[0], "status.revisions[0].state.lastUpdated", "parsing time")
	})

	t.Run("the operator reports them and goes on", func(t *testing.T) {
		op, err := inprocess.Start(env, operator.Options{})
		if err != nil {
			t.Fatal(err)
		}
		running := true
		defer func() {
			if running {
				_ = op.Stop()
			}
		}()
		for _, obj := range []*unstructured.Unstructured{bad, brokenRM} {
			waitStalled(t, c, obj)
		}
		kit.Eventually(t, 30*time.Second, "the good revision's ReleaseManager", func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: "picchu", Name: "demo-production"}, &picchuv1alpha1.ReleaseManager{})
		})
		// Left as stored: nothing was written over the values at fault.
		if err := c.Get(ctx, client.ObjectKeyFromObject(bad), bad); err != nil {
			t.Fatal(err)
		}
		targets, _, _ := unstructured.NestedSlice(bad.Object, "spec", "targets")
		if delay, _, _ := unstructured.NestedString(targets[0].(map[string]any), "release", "geometricScaling", "delay"); delay != "2562048h" {
			t.Errorf("the bad revision's delay is now %q", delay)
		}
		if _, found := bad.GetLabels()[picchuv1alpha1.LabelApp]; found {
			t.Errorf("the bad revision was labelled: %v", bad.GetLabels())
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(brokenRM), brokenRM); err != nil {
			t.Fatal(err)
		}
		revisions, _, _ := unstructured.NestedSlice(brokenRM.Object, "status", "revisions")
		if len(revisions) != 1 || revisions[0].(map[string]any)["state"].(map[string]any)["lastUpdated"] != "2026-11-21t10:00:00z" {
			t.Errorf("the release record was rewritten: %v", revisions)
		}

		// A ReleaseManager whose record went bad after it got its finalizer
		// is still let go when it is deleted.
		brokenRM.SetFinalizers([]string{picchuv1alpha1.FinalizerReleaseManager})
		if err := c.Update(ctx, brokenRM); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, brokenRM); err != nil {
			t.Fatal(err)
		}
		kit.Eventually(t, 30*time.Second, "the undecodable release manager finalized and gone", func() error {
			err := c.Get(ctx, client.ObjectKeyFromObject(brokenRM), &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": picchuv1alpha1.GroupVersion.String(), "kind": "ReleaseManager"}})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there (%v)", err)
		})

		running = false
		if err := op.Stop(); err != nil {
			t.Errorf("the operator stopped with an error: %v", err)
		}
	})
}

// checkReported checks that obj decoded with a DecodeError naming field and saying why.
func checkReported(t *testing.T, obj interface{ DecodeError() error }, field, why string) {
	t.Helper()
	if obj == nil {
		t.Errorf("not listed; want it listed with a decode error naming %s", field)
		return
	}
	err := obj.DecodeError()
	if err == nil || !strings.Contains(err.Error(), field+": ") || !strings.Contains(err.Error(), why) {
		t.Errorf("decode error %v does not name %s and say %q", err, field, why)
	}
}

// listWithin lists from the cache once it has synced, within 30 seconds.
func listWithin(ctx context.Context, c cache.Cache, list client.ObjectList) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.List(ctx, list, client.InNamespace("picchu"))
}

// waitStalled waits until obj is Stalled for an undecodable value, with a
// warning event saying so.
func waitStalled(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	kit.Eventually(t, 30*time.Second, obj.GetKind()+" "+obj.GetName()+" reported", func() error {
		u := obj.DeepCopy()
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
			return err
		}
		raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var conds []metav1.Condition
		for _, r := range raw {
			m := r.(map[string]any)
			conds = append(conds, metav1.Condition{Type: fmt.Sprint(m["type"]), Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
				Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])})
		}
		stalled := meta.FindStatusCondition(conds, picchuv1alpha1.ConditionStalled)
		if stalled == nil || stalled.Status != metav1.ConditionTrue || stalled.Reason != picchuv1alpha1.ReasonUndecodable ||
			!strings.Contains(stalled.Message, "cannot hold: ") {
			return fmt.Errorf("conditions %+v", conds)
		}
		events := &eventsv1.EventList{}
		if err := c.List(context.Background(), events, client.InNamespace("picchu")); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Regarding.Name == obj.GetName() && e.Reason == picchuv1alpha1.ReasonUndecodable && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("no %s event", picchuv1alpha1.ReasonUndecodable)
	})
}

// currentCRDs reads Picchu's CRDs from config/crd/bases.
func currentCRDs(t *testing.T) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(kit.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("finding the CRDs: %v (%d files)", err, len(paths))
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		out = append(out, crd)
	}
	return out
}

// loosened copies crds as they were before the rules that keep
// undecodable durations and timestamps out: without the duration(self)
// rules, and date-time fields without a pattern.
func loosened(crds []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	var loosen func(s *apiextensionsv1.JSONSchemaProps)
	loosen = func(s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		var kept apiextensionsv1.ValidationRules
		for _, r := range s.XValidations {
			if !strings.Contains(r.Rule, "duration(self)") {
				kept = append(kept, r)
			}
		}
		s.XValidations = kept
		if s.Format == "date-time" {
			s.Pattern = ""
		}
		for k, p := range s.Properties {
			loosen(&p)
			s.Properties[k] = p
		}
		if s.Items != nil {
			loosen(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			loosen(s.AdditionalProperties.Schema)
		}
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		crd = crd.DeepCopy()
		for i := range crd.Spec.Versions {
			loosen(crd.Spec.Versions[i].Schema.OpenAPIV3Schema)
		}
		out = append(out, crd)
	}
	return out
}

// startWithCRDs starts a delivery API server with crds, stopped when the test ends.
func startWithCRDs(ctx context.Context, t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) *harness.Env {
	t.Helper()
	scheme, err := harness.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	assets, err := kit.Assets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server := &harness.Server{Env: &envtest.Environment{Scheme: scheme, BinaryAssetsDirectory: assets, CRDs: crds,
		ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout}}
	if server.Config, err = server.Env.Start(); err != nil {
		_ = server.Env.Stop()
		t.Fatalf("starting an API server with the older CRDs: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Env.Stop(); err != nil {
			t.Errorf("stopping the API server: %v", err)
		}
	})
	if server.Client, err = client.New(server.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	return &harness.Env{Scheme: scheme, Namespace: "picchu", Fleet: "production", Delivery: server}
}

// upgrade replaces the server's CRDs with crds and waits until the
// Revision schema rejects an overflowing delay.
func upgrade(ctx context.Context, t *testing.T, env *harness.Env, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crdClient, err := client.New(env.Delivery.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		installed := &apiextensionsv1.CustomResourceDefinition{}
		if err := crdClient.Get(ctx, client.ObjectKeyFromObject(crd), installed); err != nil {
			t.Fatal(err)
		}
		installed.Spec = crd.Spec
		if err := crdClient.Update(ctx, installed); err != nil {
			t.Fatalf("installing the current %s: %v", crd.Name, err)
		}
	}
	c := env.Delivery.Client
	kit.Eventually(t, 30*time.Second, "the current Revision schema in force", func() error {
		probe := object(t, "Revision", revisionJSON(`"release": {"geometricScaling": {"delay": "2562048h"}}`))
		if err := c.Create(ctx, probe); !apierrors.IsInvalid(err) {
			if err == nil {
				_ = c.Delete(ctx, probe)
			}
			return fmt.Errorf("an overflowing delay was not rejected: %v", err)
		}
		return nil
	})
}
