package applier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
)

var replicaSetKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

// scalable is a ReplicaSet as Picchu applies it: everything but replicas.
func scalable(ns, name string, annotations map[string]string) *appsv1.ReplicaSet {
	labels := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name, picchuv1alpha1.LabelApp: name},
			Annotations: annotations},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
		},
	}
}

func replicasOf(t *testing.T, c client.Client, rs *appsv1.ReplicaSet) int32 {
	t.Helper()
	got := &appsv1.ReplicaSet{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(rs), got); err != nil {
		t.Fatal(err)
	}
	return *got.Spec.Replicas
}

func ensureNamespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
}

// TestHPARecreation_HandingReplicasToAnAutoscalerResetsNothing: Picchu
// creates a ReplicaSet at its count, sets its replicas while it ramps, then
// hands them to an autoscaler (it stops setting them and keeps applying the
// rest). The replicas stay what they were, never the API server's default
// of 1, and what the autoscaler then sets is never undone by Picchu.
func TestHPARecreation_HandingReplicasToAnAutoscalerResetsNothing(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	ensureNamespace(t, target.Client, "handover")
	c := applier.NewCluster(target.Cluster, target.Client, target.Client, "", log.Log)
	rs := scalable("handover", "v1", map[string]string{"picchu.medium.engineering/ramping": "true"})
	if err := c.CreateScaled(ctx, rs, 6); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, rs); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, target.Client, rs); got != 6 {
		t.Fatalf("created with %d replicas, want 6", got)
	}
	if err := c.ApplyReplicas(ctx, replicaSetKind, "handover", "v1", 9); err != nil {
		t.Fatal(err)
	}
	// Ramping ends: the annotation goes, the replicas are no longer applied.
	done := scalable("handover", "v1", nil)
	if err := c.Apply(ctx, done); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, target.Client, rs); got != 9 {
		t.Fatalf("after the hand-over: %d replicas, want the 9 Picchu last set", got)
	}
	// The HPA controller scales through the scale subresource.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":14}}`))
	if err := target.Client.SubResource("scale").Patch(ctx, scalable("handover", "v1", nil), patch, client.FieldOwner("kube-controller-manager")); err != nil {
		t.Fatalf("scaling as the HPA controller: %v", err)
	}
	// Picchu applies its ReplicaSet again (an annotation changed): replicas stay.
	done.Annotations = map[string]string{"picchu.medium.engineering/autoscaler": "hpa"}
	if err := c.Apply(ctx, done); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, target.Client, rs); got != 14 {
		t.Errorf("after Picchu applied again: %d replicas, want the autoscaler's 14", got)
	}
}

// liveReplicaSet reads obj's ReplicaSet from the API server, with its
// managed fields, as the plan's scale step reads it from its cache.
func liveReplicaSet(t *testing.T, c client.Client, obj client.Object) *appsv1.ReplicaSet {
	t.Helper()
	rs := &appsv1.ReplicaSet{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// containsReplicas says managed fields name spec.replicas.
func containsReplicas(fieldsV1 []byte) bool {
	var fields map[string]map[string]any
	if json.Unmarshal(fieldsV1, &fields) != nil {
		return false
	}
	_, ok := fields["f:spec"]["f:replicas"]
	return ok
}

// TestAnnotationOverwriteAndCleanup: Picchu's annotations are merged with
// the ones others put on its ReplicaSet, and the ramping annotation is
// removed when Picchu stops applying it, while the others stay.
func TestAnnotationOverwriteAndCleanup(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	ensureNamespace(t, target.Client, "annotations")
	c := applier.NewCluster(target.Cluster, target.Client, target.Client, "", log.Log)
	ramping := map[string]string{"picchu.medium.engineering/ramping": "true", "picchu.medium.engineering/autoscaler": "hpa"}
	rs := scalable("annotations", "v1", ramping)
	if err := c.CreateScaled(ctx, rs, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, rs); err != nil {
		t.Fatal(err)
	}
	// Someone else (a person, another controller) annotates it.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"team.example/owner":"checkout"}}}`))
	if err := target.Client.Patch(ctx, scalable("annotations", "v1", nil), patch, client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	// While ramping, Picchu sets the replicas alone (releasing what it
	// co-owned at creation), then ramping ends.
	if err := c.ApplyReplicas(ctx, replicaSetKind, "annotations", "v1", 3); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, scalable("annotations", "v1", map[string]string{"picchu.medium.engineering/autoscaler": "hpa"})); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.ReplicaSet{}
	if err := target.Client.Get(ctx, client.ObjectKeyFromObject(rs), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"picchu.medium.engineering/autoscaler": "hpa", "team.example/owner": "checkout"}
	if fmt.Sprint(got.Annotations) != fmt.Sprint(want) {
		t.Errorf("annotations %v, want %v", got.Annotations, want)
	}
	if *got.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *got.Spec.Replicas)
	}
}

// TestFieldOwnership_ReplicasTakenOverFromAnOlderPicchu: a ReplicaSet whose
// replicas an older Picchu applied with its main manager keeps them when
// the new one, which never applies replicas with that manager, takes over.
func TestFieldOwnership_ReplicasTakenOverFromAnOlderPicchu(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	ensureNamespace(t, target.Client, "upgrade")
	c := applier.NewCluster(target.Cluster, target.Client, target.Client, "", log.Log)
	old := scalable("upgrade", "v1", nil)
	old.Spec.Replicas = ptr.To[int32](11)
	if err := c.Apply(ctx, old); err != nil {
		t.Fatal(err)
	}
	// Read as a target cluster's cache holds it: its managed fields cut
	// to what the take-over reads.
	cached := func() *appsv1.ReplicaSet {
		live := liveReplicaSet(t, target.Client, old)
		if _, err := applier.KeepReplicasOwner(live); err != nil {
			t.Fatal(err)
		}
		return live
	}
	live := cached()
	if err := c.TakeOverReplicas(ctx, replicaSetKind, live, *live.Spec.Replicas); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, scalable("upgrade", "v1", nil)); err != nil {
		t.Fatal(err)
	}
	if got := replicasOf(t, target.Client, old); got != 11 {
		t.Errorf("after the upgrade: %d replicas, want 11", got)
	}
	got := &appsv1.ReplicaSet{}
	if err := target.Client.Get(ctx, client.ObjectKeyFromObject(old), got); err != nil {
		t.Fatal(err)
	}
	for _, mf := range got.ManagedFields {
		if mf.Manager == applier.FieldManager && mf.FieldsV1 != nil && containsReplicas(mf.FieldsV1.Raw) {
			t.Errorf("the main manager still owns replicas: %s", mf.FieldsV1.Raw)
		}
	}
	// Without a main-manager claim, taking over is a no-op: no write.
	live = cached()
	if err := c.TakeOverReplicas(ctx, replicaSetKind, live, *live.Spec.Replicas); err != nil {
		t.Fatal(err)
	}
	if after := liveReplicaSet(t, target.Client, old); after.ResourceVersion != live.ResourceVersion {
		t.Errorf("taking over replicas nobody else applied wrote the ReplicaSet: resourceVersion %s → %s", live.ResourceVersion, after.ResourceVersion)
	}
}
