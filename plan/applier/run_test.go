package applier_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/test/kit"
)

// runCluster is the first target bound as the operator binds it
// (wiredClusters), with its writes and its GETs of single objects counted.
func runCluster(t *testing.T) (*applier.Cluster, *writes) {
	t.Helper()
	cs, w := wiredClusters(t)
	return cs[0], w
}

// cached waits until c's cache holds obj: a run after it reads it there.
func cached(t *testing.T, c *applier.Cluster, obj client.Object) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, env.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(gvk)
	kit.Eventually(t, 30*time.Second, fmt.Sprintf("the cache holding %s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName()), func() error {
		return c.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), live)
	})
}

// TestRun_AsksOnlyAboutTheNamespaceItCreates: a new app's first run writes
// its namespace, a ConfigMap and a ReplicaSet (created at its count, then
// applied, as a plan's scale step does). It asks the API server about the namespace alone, whose absence is
// the ownership check, and makes the ReplicaSet in two writes. The next
// run (the replicas set at the same count, then the ReplicaSet applied),
// once the cache holds them, asks and writes nothing. The ReplicaSet
// is owned as Picchu owns what it scales: ReplicasFieldManager holds its
// replicas and nothing else, FieldManager every other field (and the
// replicas with it until its next write, which never sends them).
func TestRun_AsksOnlyAboutTheNamespaceItCreates(t *testing.T) {
	c, w := runCluster(t)
	name := fmt.Sprintf("run-test-%d", nsSeq.Add(1))
	owner := map[string]string{picchuv1alpha1.LabelApp: "demo", picchuv1alpha1.LabelTarget: "production"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: owner}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-" + name, Namespace: name, Labels: owner}, Data: map[string]string{"a": "1"}}
	rs := scalable(name, "rs-"+name, nil)
	names := []string{ns.Name, cm.Name, rs.Name}
	// As a plan's scale step does: a ReplicaSet it does not find is
	// created at its count, one it finds has its replicas set; either is
	// then applied.
	runOnce := func(exists bool) {
		t.Helper()
		ctx := applier.WithRun(context.Background())
		for _, obj := range []client.Object{ns, cm} {
			if err := c.Apply(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		scale := func() error { return c.CreateScaled(ctx, rs, 3) }
		if exists {
			scale = func() error { return c.ApplyReplicas(ctx, replicaSetKind, rs.Namespace, rs.Name, 3) }
		}
		if err := scale(); err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}

	before := w.total()
	runOnce(false)
	if got := w.getsOf(names...); got != 1 || w.getsOf(ns.Name) != 1 {
		t.Errorf("the first run asked the API server %d times about its objects (%d about the namespace), want once, about the namespace",
			got, w.getsOf(ns.Name))
	}
	if got := w.total() - before; got != 4 {
		t.Errorf("the first run wrote %d times, want 4: the namespace, the ConfigMap, and the ReplicaSet in two", got)
	}
	live := liveReplicaSet(t, env.Targets[0].Client, rs)
	if *live.Spec.Replicas != 3 {
		t.Errorf("created with %d replicas, want 3", *live.Spec.Replicas)
	}
	for _, mf := range live.ManagedFields {
		if mf.FieldsV1 == nil || mf.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		raw := string(mf.FieldsV1.Raw)
		switch mf.Manager {
		case applier.ReplicasFieldManager:
			if raw != `{"f:spec":{"f:replicas":{}}}` {
				t.Errorf("%s owns %s, want the replicas alone", mf.Manager, raw)
			}
		case applier.FieldManager:
			if !strings.Contains(raw, `"f:template"`) || !strings.Contains(raw, `"f:selector"`) {
				t.Errorf("%s owns %s, want every field", mf.Manager, raw)
			}
		}
	}

	for _, obj := range []client.Object{ns, cm, rs} {
		cached(t, c, obj)
	}
	asked, wrote := w.getsOf(names...), w.total()
	runOnce(true)
	if got := w.getsOf(names...) - asked; got != 0 {
		t.Errorf("the second run asked the API server %d times about objects its cache holds, want 0", got)
	}
	if got := w.total() - wrote; got != 0 {
		t.Errorf("the second run wrote %d times with nothing changed, want 0", got)
	}
}

// TestRun_NeverWritesOverWhatItDidNotCreate: a run asks about every object
// its cache lacks, but for those it wrote and those of a namespace it
// created; and even there, about what the cluster puts in every new
// namespace. Someone else's object of the same name is never written over:
// in a namespace a former run created, and, in a namespace this run
// created, one Kubernetes makes in every namespace (its controllers' default
// ServiceAccount, made here as they would, after the namespace).
func TestRun_NeverWritesOverWhatItDidNotCreate(t *testing.T) {
	c, w := runCluster(t)
	ctx := context.Background()
	owner := map[string]string{picchuv1alpha1.LabelApp: "demo", picchuv1alpha1.LabelTarget: "production"}
	theirs := func(obj client.Object) {
		t.Helper()
		if err := env.Targets[0].Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	notOwned := func(err error, what string) {
		t.Helper()
		var e *applier.NotOwnedError
		if !errors.As(err, &e) {
			t.Errorf("applying over %s: got %v, want a NotOwnedError", what, err)
		}
	}

	// A namespace a former run created, where someone put a ConfigMap.
	old := fmt.Sprintf("run-test-%d", nsSeq.Add(1))
	if err := c.Apply(applier.WithRun(ctx), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: old, Labels: owner}}); err != nil {
		t.Fatal(err)
	}
	theirs(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: old}, Data: map[string]string{"a": "theirs"}})
	before := w.total()
	notOwned(c.Apply(applier.WithRun(ctx), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config", Namespace: old, Labels: owner}}),
		"a ConfigMap in a namespace a former run created")

	// A namespace this run creates, and the default ServiceAccount
	// Kubernetes puts in it.
	run := applier.WithRun(ctx)
	fresh := fmt.Sprintf("run-test-%d", nsSeq.Add(1))
	if err := c.Apply(run, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fresh, Labels: owner}}); err != nil {
		t.Fatal(err)
	}
	before++
	theirs(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fresh}})
	notOwned(c.Apply(run, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: fresh, Labels: owner}}),
		"the default ServiceAccount of a namespace the run created")
	if got := w.total() - before; got != 0 {
		t.Errorf("%d writes over objects Picchu did not create, want 0", got)
	}
	cm := &corev1.ConfigMap{}
	if err := c.Live.Get(ctx, client.ObjectKey{Namespace: old, Name: "config"}, cm); err != nil || cm.Data["a"] != "theirs" || len(cm.Labels) != 0 {
		t.Errorf("their ConfigMap = %v %v, %v; want it untouched", cm.Labels, cm.Data, err)
	}
	sa := &corev1.ServiceAccount{}
	if err := c.Live.Get(ctx, client.ObjectKey{Namespace: fresh, Name: "default"}, sa); err != nil || len(sa.Labels) != 0 {
		t.Errorf("the default ServiceAccount = %v, %v; want it untouched", sa.Labels, err)
	}
}
