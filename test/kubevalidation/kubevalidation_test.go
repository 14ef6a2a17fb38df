package kubevalidation_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/kubevalidation"
)

// TestAdmission_AdmitsTheOrdinaryRevision: the Revision an exhausted input
// makes is admitted with the schema's and the webhook's defaults, and every
// object built from it passes, so the fuzz target checks something.
func TestAdmission_AdmitsTheOrdinaryRevision(t *testing.T) {
	a, err := admission()
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Create(revision(&source{}, "v1").json(t))
	if err != nil {
		t.Fatalf("rejected: %v", err)
	}
	tgt := r.Spec.Targets[0]
	if len(tgt.Ports) != 1 || tgt.Ports[0].Port != 80 || tgt.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("the schema's defaults are not applied: ports %+v", tgt.Ports)
	}
	if tgt.DefaultIngressPorts["private"] != "http" || tgt.Scale.Default != 1 {
		t.Errorf("the mutating webhook did not run: defaultIngressPorts %v, scale.default %d", tgt.DefaultIngressPorts, tgt.Scale.Default)
	}
	objs, err := targetObjects(r, r, 2, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, obj := range objs {
		if err := kubevalidation.Validate(obj); err != nil {
			t.Errorf("rejected: %v", err)
		}
		kind := fmt.Sprintf("%T", obj)
		kinds[kind[strings.LastIndex(kind, ".")+1:]] = true
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "Role", "RoleBinding", "ConfigMap", "Secret", "ReplicaSet", "Pod", "Service", "PodDisruptionBudget"} {
		if !kinds[kind] {
			t.Errorf("no %s among the objects built: %v", kind, kinds)
		}
	}
}

// TestAdmission_RejectsWhatTheDeliveryClusterRejects: the schema's pattern,
// its CEL rules and the validating webhook each reject here.
func TestAdmission_RejectsWhatTheDeliveryClusterRejects(t *testing.T) {
	a, err := admission()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		edit func(d doc)
		want string
	}{
		"pattern":  {func(d doc) { d.target()["ports"] = []any{map[string]any{"name": "HTTP"}} }, "should match"},
		"CEL rule": {func(d doc) { d.target()["defaultIngressPorts"] = map[string]any{"internal": "http"} }, "keys must be ingress names"},
		"webhook": {func(d doc) {
			d.target()["ports"] = []any{
				map[string]any{"name": "a", "port": int64(80), "containerPort": int64(80)},
				map[string]any{"name": "b", "port": int64(81), "containerPort": int64(81)},
			}
		}, "name its default port here"},
	} {
		t.Run(name, func(t *testing.T) {
			d := revision(&source{}, "v1")
			tc.edit(d)
			_, err := a.Create(d.json(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a rejection saying %q", err, tc.want)
			}
		})
	}
}

// TestValidate_RejectsWhatATargetClusterRejects: Validate is a target API
// server's validation.
func TestValidate_RejectsWhatATargetClusterRejects(t *testing.T) {
	ports := []picchuv1alpha1.PortInfo{{Name: "http", Port: 80, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	if err := kubevalidation.Validate(manifests.Service("shop", "production", ports)); err != nil {
		t.Errorf("a valid Service is rejected: %v", err)
	}
	for name, tc := range map[string]struct {
		obj  runtime.Object
		want string
	}{
		"Service without ports": {
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop-production"}},
			"spec.ports: Required value",
		},
		"duplicate Service ports": {
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "shop-production"}, Spec: corev1.ServiceSpec{
				Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "web", Port: 80}},
			}},
			"spec.ports[1]: Duplicate value",
		},
		"ReplicaSet named by a tag with two dots": {
			manifests.ReplicaSet(manifests.Build{App: "shop", Target: "production", Tag: "a..b", Image: "shop:v1", Spec: &picchuv1alpha1.RevisionTarget{}}),
			"metadata.name",
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := kubevalidation.Validate(tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a rejection naming %q", err, tc.want)
			}
		})
	}
}
