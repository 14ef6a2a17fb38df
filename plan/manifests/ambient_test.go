package manifests_test

import (
	"context"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

func TestModeOf(t *testing.T) {
	amb := func(running bool) manifests.MeshBuild { return manifests.MeshBuild{Ambient: true, Running: running} }
	side := func(running bool) manifests.MeshBuild { return manifests.MeshBuild{Running: running} }
	for _, tc := range []struct {
		name   string
		builds []manifests.MeshBuild
		want   manifests.MeshMode
	}{
		{"no build", nil, manifests.MeshSidecar},
		{"sidecar builds run", []manifests.MeshBuild{side(true), side(false)}, manifests.MeshSidecar},
		{"ambient builds run", []manifests.MeshBuild{amb(true), side(false)}, manifests.MeshAmbient},
		{"both run: transition", []manifests.MeshBuild{amb(true), side(true)}, manifests.MeshTransition},
		{"an older ambient build still runs", []manifests.MeshBuild{side(true), amb(true)}, manifests.MeshTransition},
		{"none runs: the newest's mode", []manifests.MeshBuild{amb(false), side(false)}, manifests.MeshAmbient},
		{"none runs, newest sidecar", []manifests.MeshBuild{side(false), amb(false)}, manifests.MeshSidecar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := manifests.ModeOf(tc.builds); got != tc.want {
				t.Errorf("ModeOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAppNamespace_LabelsItsMeshMode(t *testing.T) {
	owner := map[string]string{picchuv1alpha1.LabelApp: "shop", picchuv1alpha1.LabelTarget: "production"}
	sidecar := map[string]string{"istio-injection": "enabled"}
	ambient := map[string]string{"istio.io/dataplane-mode": "ambient", "istio.io/use-waypoint": "waypoint"}
	union := func(sets ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, s := range sets {
			maps.Copy(out, s)
		}
		return out
	}
	for mode, want := range map[manifests.MeshMode]map[string]string{
		manifests.MeshSidecar:    union(owner, sidecar),
		manifests.MeshAmbient:    union(owner, ambient),
		manifests.MeshTransition: union(owner, sidecar, ambient),
	} {
		if got := manifests.AppNamespace("shop", "production", mode).Labels; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: labels %v, want %v", mode, got, want)
		}
	}
}

func TestWaypoint_Objects(t *testing.T) {
	gw := manifests.WaypointGateway("shop", "production")
	if gw.Name != "waypoint" || gw.Namespace != "shop-production" || gw.Spec.GatewayClassName != "istio-waypoint" ||
		gw.Labels["istio.io/waypoint-for"] != "all" || len(gw.Spec.Listeners) != 1 ||
		gw.Spec.Listeners[0].Port != 15008 || gw.Spec.Listeners[0].Protocol != "HBONE" ||
		gw.Spec.Infrastructure.ParametersRef.Name != "waypoint-options" {
		t.Errorf("gateway %+v", gw)
	}
	resources := &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	cm, err := manifests.WaypointOptions("shop", "production", resources)
	if err != nil {
		t.Fatal(err)
	}
	var overlay struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(cm.Data["deployment"]), &overlay); err != nil {
		t.Fatalf("the overlay is not a Deployment's: %v\n%s", err, cm.Data["deployment"])
	}
	pod := overlay.Spec.Template
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "waypoint" ||
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key != "node.medium.engineering/role" ||
		len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "istio-proxy" ||
		!pod.Spec.Containers[0].Resources.Requests.Cpu().Equal(resource.MustParse("500m")) ||
		!strings.Contains(pod.Annotations["ad.datadoghq.com/istio-proxy.checks"], "istio_mesh_endpoint") {
		t.Errorf("overlay %s", cm.Data["deployment"])
	}
	for _, tc := range []struct {
		name              string
		hpa               *picchuv1alpha1.WaypointHPA
		min, max, cpu, pd int32
	}{
		{"defaults", nil, 2, 20, 70, 1},
		{"at least two", &picchuv1alpha1.WaypointHPA{MinReplicas: ptr(int32(1))}, 2, 20, 70, 1},
		{"set", &picchuv1alpha1.WaypointHPA{MinReplicas: ptr(int32(5)), MaxReplicas: ptr(int32(8)), TargetCPUUtilizationPercentage: ptr(int32(50))}, 5, 8, 50, 4},
		{"max below min", &picchuv1alpha1.WaypointHPA{MinReplicas: ptr(int32(5)), MaxReplicas: ptr(int32(3))}, 5, 5, 70, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hpa := manifests.WaypointAutoscaler("shop", "production", tc.hpa)
			if *hpa.Spec.MinReplicas != tc.min || hpa.Spec.MaxReplicas != tc.max || *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization != tc.cpu ||
				hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "waypoint" {
				t.Errorf("autoscaler %+v", hpa.Spec)
			}
			pdb := manifests.WaypointDisruptionBudget("shop", "production", tc.hpa)
			if pdb.Spec.MinAvailable.IntVal != tc.pd || pdb.Spec.Selector.MatchLabels["gateway.networking.k8s.io/gateway-name"] != "waypoint" {
				t.Errorf("disruption budget %+v", pdb.Spec)
			}
		})
	}
}

// TestWaypoint_TheTargetAcceptsIt applies the waypoint's objects to a
// target API server with the Gateway API's real CRDs, and removes them.
func TestWaypoint_TheTargetAcceptsIt(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	if err := c.Apply(ctx, manifests.AppNamespace("mesh", "production", manifests.MeshAmbient)); err != nil {
		t.Fatal(err)
	}
	options, err := manifests.WaypointOptions("mesh", "production", nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		options, manifests.WaypointGateway("mesh", "production"),
		manifests.WaypointDisruptionBudget("mesh", "production", nil), manifests.WaypointAutoscaler("mesh", "production", nil),
	}
	for _, obj := range objs {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T: %v", obj, err)
		}
	}
	gw := &gatewayv1.Gateway{}
	if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(objs[1]), gw); err != nil {
		t.Fatal(err)
	}
	if gw.Spec.Infrastructure == nil || gw.Spec.Infrastructure.ParametersRef == nil || gw.Spec.Infrastructure.ParametersRef.Name != "waypoint-options" {
		t.Errorf("stored gateway %+v", gw.Spec)
	}
	for _, obj := range objs {
		if err := c.Delete(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, obj := range objs {
		got := empty(obj)
		if err := tgt.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err == nil && got.GetDeletionTimestamp().IsZero() {
			t.Errorf("%T %s not deleted", obj, obj.GetName())
		}
	}
}
