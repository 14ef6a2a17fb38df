package manifests_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

func externalSecret(name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion("external-secrets.io/v1")
	u.SetKind("ExternalSecret")
	u.SetName(name)
	u.SetNamespace("picchu")
	u.SetLabels(map[string]string{"config": "shop", "team": "a"})
	u.SetAnnotations(map[string]string{"note": "x"})
	u.SetResourceVersion("42")
	u.Object["status"] = map[string]any{"refreshTime": "2026-01-01T00:00:00Z"}
	return u
}

func TestExternalSecretCopy(t *testing.T) {
	spec := map[string]any{
		"refreshInterval": "1h",
		"secretStoreRef":  map[string]any{"kind": "ClusterSecretStore", "name": "vault"},
		"target":          map[string]any{"name": "shop-env"},
		"dataFrom":        []any{map[string]any{"extract": map[string]any{"key": "shop"}}},
	}
	src := externalSecret("shop-secrets", spec)
	cp := manifests.ExternalSecretCopy("shop", "production", "v1", src)
	want := map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{
			"name": "shop-secrets", "namespace": "shop-production",
			"labels": map[string]any{
				picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production", picchuv1alpha1.LabelTag: "v1",
			},
		},
		"spec": spec,
	}
	if !reflect.DeepEqual(cp.Object, want) {
		t.Errorf("copy\n got %v\nwant %v", cp.Object, want)
	}
	cp.Object["spec"].(map[string]any)["target"].(map[string]any)["name"] = "changed"
	if manifests.ExternalSecretTarget(src) != "shop-env" {
		t.Error("the copy shares its spec with the source")
	}
}

func TestExternalSecretTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{name: "target name", spec: map[string]any{"target": map[string]any{"name": "env"}}, want: "env"},
		{name: "no target", spec: map[string]any{}, want: "es"},
		{name: "target without a name", spec: map[string]any{"target": map[string]any{"creationPolicy": "Owner"}}, want: "es"},
		{name: "empty name", spec: map[string]any{"target": map[string]any{"name": ""}}, want: "es"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := manifests.ExternalSecretTarget(externalSecret("es", tc.spec)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReplicaSet_ExternalSecretsInEnvFrom(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name     string
		optional bool
		want     []corev1.EnvFromSource
	}{
		{name: "served", want: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-v1-config"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-v1-secrets"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-env"}}},
		}},
		{name: "not served", optional: true, want: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-v1-config"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-v1-secrets"}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "shop-env"}, Optional: &yes}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := build()
			b.ExternalSecrets, b.ExternalSecretsOptional = []string{"shop-env"}, tc.optional
			for _, c := range manifests.ReplicaSet(b).Spec.Template.Spec.Containers {
				if !reflect.DeepEqual(c.EnvFrom, tc.want) {
					t.Errorf("container %s envFrom\n got %+v\nwant %+v", c.Name, c.EnvFrom, tc.want)
				}
			}
		})
	}
}
