package manifests_test

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/medium/picchu/decide/platform"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

var multiArch = []platform.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}}

func nodeIn(key string, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func requiredTerms(terms ...[]corev1.NodeSelectorRequirement) *corev1.NodeSelector {
	sel := &corev1.NodeSelector{}
	for _, t := range terms {
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
	}
	return sel
}

func TestReplicaSet_Platforms(t *testing.T) {
	osIn, archIn := nodeIn("kubernetes.io/os", "linux"), nodeIn("kubernetes.io/arch", "amd64", "arm64")
	zone := nodeIn("topology.kubernetes.io/zone", "us-east-1a")
	pool := nodeIn("pool", "general")
	userAffinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: requiredTerms([]corev1.NodeSelectorRequirement{zone}, []corev1.NodeSelectorRequirement{pool}),
	}}
	for _, tc := range []struct {
		name      string
		affinity  *corev1.Affinity
		platforms []platform.Platform
		want      *corev1.Affinity
	}{
		{"unknown platforms, no affinity", nil, nil, nil},
		{"unknown platforms keep the user's affinity", userAffinity, nil, userAffinity},
		{"platforms alone", nil, multiArch, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: requiredTerms([]corev1.NodeSelectorRequirement{osIn, archIn}),
		}}},
		{"platforms and-ed into each of the user's terms", userAffinity, multiArch, &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: requiredTerms(
				[]corev1.NodeSelectorRequirement{zone, osIn, archIn},
				[]corev1.NodeSelectorRequirement{pool, osIn, archIn}),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build()
			b.Spec.Affinity = tc.affinity
			b.Platforms = tc.platforms
			got := manifests.ReplicaSet(b).Spec.Template.Spec.Affinity
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("affinity\n%+v\nwant\n%+v", got, tc.want)
			}
			if !reflect.DeepEqual(b.Spec.Affinity, tc.affinity) {
				t.Error("the target's affinity was changed")
			}
		})
	}
}

func TestReplicaSet_PlatformsApplyToARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	b := build()
	b.Tag = "v2-platforms"
	b.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: requiredTerms([]corev1.NodeSelectorRequirement{nodeIn("pool", "general")}),
	}}
	b.Platforms = multiArch
	for _, obj := range []client.Object{
		manifests.AppNamespace("shop", "production", manifests.MeshSidecar),
		manifests.ReplicaSet(b),
	} {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T: %v", obj, err)
		}
	}
	rs := &appsv1.ReplicaSet{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: "shop-production", Name: b.Tag}, rs); err != nil {
		t.Fatal(err)
	}
	want := manifests.ReplicaSet(b).Spec.Template.Spec.Affinity
	if got := rs.Spec.Template.Spec.Affinity; !reflect.DeepEqual(got, want) {
		t.Errorf("stored affinity\n%+v\nwant\n%+v", got, want)
	}
}
