package applier

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMadeByKubernetes(t *testing.T) {
	controller := true
	owned := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "web-abc",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "1", Controller: &controller}}}}
	for _, tc := range []struct {
		group, kind, name string
		obj               *metav1.PartialObjectMetadata
		want              bool
	}{
		{"", "Event", "x", nil, true},
		{"events.k8s.io", "Event", "x", nil, true},
		{"", "Endpoints", "web", nil, true},
		{"", "ServiceAccount", "default", nil, true},
		{"", "ServiceAccount", "addon", nil, false},
		{"", "ConfigMap", "kube-root-ca.crt", nil, true},
		{"", "ConfigMap", "addon-settings", nil, false},
		{"", "Pod", "", &owned, true},
		{"apps", "Deployment", "addon", nil, false},
		{"cert-manager.io", "Certificate", "kube-root-ca.crt", nil, false},
	} {
		obj := tc.obj
		if obj == nil {
			obj = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
		}
		if got := madeByKubernetes(schema.GroupVersionKind{Group: tc.group, Version: "v1", Kind: tc.kind}, obj); got != tc.want {
			t.Errorf("%s %s/%s: made by Kubernetes %t, want %t", tc.group, tc.kind, obj.Name, got, tc.want)
		}
	}
}

func TestVacated_SaysWhatItFound(t *testing.T) {
	v := Vacated{Foreign: []string{"ConfigMap/a", "Deployment/b"}, Count: 12, Unlisted: []string{"metrics.k8s.io/v1beta1"}}
	s := v.String()
	for _, want := range []string{"ConfigMap/a, Deployment/b and 10 more", "metrics.k8s.io/v1beta1"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not say %q", s, want)
		}
	}
	if !v.Left() || (Vacated{}).Left() {
		t.Errorf("Left: %t for %v, %t for nothing", v.Left(), v, (Vacated{}).Left())
	}
}
