package manifests

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// MeshMode is how the app's namespace joins Istio's mesh.
type MeshMode string

const (
	// MeshSidecar: Istio injects a sidecar into every pod (istio-injection=enabled).
	MeshSidecar MeshMode = "sidecar"
	// MeshAmbient: ztunnel and the namespace's waypoint carry the traffic
	// (istio.io/dataplane-mode=ambient, istio.io/use-waypoint=waypoint).
	MeshAmbient MeshMode = "ambient"
	// MeshTransition: builds of both modes run; the namespace has both labels
	// and pods of ambient builds opt out of injection.
	MeshTransition MeshMode = "transition"
)

// MeshBuild is a build as the namespace's mesh mode sees it.
type MeshBuild struct {
	// Ambient is its target's ambientMesh.
	Ambient bool
	// Running says it has (or is asked for) pods on the cluster.
	Running bool
}

// ModeOf is the namespace's mesh mode, from the app's builds newest first:
// the mode of the builds that run pods, MeshTransition when both modes do,
// and the newest build's when none does (MeshSidecar when there is none).
func ModeOf(builds []MeshBuild) MeshMode {
	var ambient, sidecar bool
	for _, b := range builds {
		if b.Running {
			ambient, sidecar = ambient || b.Ambient, sidecar || !b.Ambient
		}
	}
	switch {
	case ambient && sidecar:
		return MeshTransition
	case ambient:
		return MeshAmbient
	case sidecar:
		return MeshSidecar
	case len(builds) > 0 && builds[0].Ambient:
		return MeshAmbient
	}
	return MeshSidecar
}

// Istio's labels for ambient mode.
const (
	labelDataplaneMode = "istio.io/dataplane-mode"
	labelUseWaypoint   = "istio.io/use-waypoint"
	labelWaypointFor   = "istio.io/waypoint-for"
	labelGatewayName   = "gateway.networking.k8s.io/gateway-name"
	// LabelSidecarInject on a pod opts it in or out of sidecar injection.
	LabelSidecarInject = "sidecar.istio.io/inject"
)

// WaypointName names the waypoint Gateway and the objects that go with it.
const WaypointName = "waypoint"

// waypointOptionsName is the ConfigMap the waypoint Gateway takes its
// deployment overlay from.
const waypointOptionsName = "waypoint-options"

// Defaults of the waypoint's autoscaler.
const (
	waypointMinReplicas int32 = 2
	waypointMaxReplicas int32 = 20
	waypointCPUPercent  int32 = 70
)

// meshLabels are the namespace labels of mode.
func meshLabels(mode MeshMode) map[string]string {
	out := map[string]string{}
	if mode != MeshAmbient {
		out[labelIstioInj] = "enabled"
	}
	if mode != MeshSidecar {
		out[labelDataplaneMode] = "ambient"
		out[labelUseWaypoint] = WaypointName
	}
	return out
}

// WantsWaypoint says the namespace needs its waypoint in mode.
func WantsWaypoint(mode MeshMode) bool { return mode != MeshSidecar }

// WaypointGateway is the namespace's waypoint: an Istio waypoint Gateway
// for every kind of traffic, its deployment overlaid by WaypointOptions.
func WaypointGateway(app, target string) *gatewayv1.Gateway {
	l := appLabels(app, target)
	l[labelWaypointFor] = "all"
	return &gatewayv1.Gateway{
		TypeMeta:   metav1.TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "Gateway"},
		ObjectMeta: metav1.ObjectMeta{Name: WaypointName, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: l},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: "istio-waypoint",
			Listeners: []gatewayv1.Listener{{
				Name: "mesh", Port: 15008, Protocol: "HBONE",
			}},
			Infrastructure: &gatewayv1.GatewayInfrastructure{
				ParametersRef: &gatewayv1.LocalParametersReference{Group: "", Kind: "ConfigMap", Name: waypointOptionsName},
			},
		},
	}
}

// WaypointOptions is the waypoint's deployment overlay: its pods tolerate
// the "waypoint" taint and must run on nodes labelled
// node.medium.engineering/role=waypoint, Datadog checks their proxy, and
// its proxy gets the target's waypointResources when set.
func WaypointOptions(app, target string, resources *corev1.ResourceRequirements) (*corev1.ConfigMap, error) {
	cm := WaypointOptionsName(app, target)
	proxy := map[string]any{"name": "istio-proxy"}
	if resources != nil {
		proxy["resources"] = resources
	}
	overlay := map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{
			"ad.datadoghq.com/istio-proxy.checks": `{"istio":{"init_config":{},"instances":[{"istio_mesh_endpoint":"http://%%host%%:15020/stats/prometheus","use_openmetrics":true}]}}`,
		}},
		"spec": map[string]any{
			"tolerations": []corev1.Toleration{{Key: "waypoint", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			"affinity": &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "node.medium.engineering/role", Operator: corev1.NodeSelectorOpIn, Values: []string{"waypoint"},
					}},
				}}},
			}},
			"containers": []any{proxy},
		},
	}}}
	deployment, err := yaml.Marshal(overlay)
	if err != nil {
		return nil, fmt.Errorf("writing the waypoint's deployment overlay: %w", err)
	}
	cm.Data = map[string]string{"deployment": string(deployment)}
	return cm, nil
}

// WaypointOptionsName is the waypoint's options ConfigMap without its
// data: what removing it needs, without writing the overlay out.
func WaypointOptionsName(app, target string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: waypointOptionsName, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)},
	}
}

// waypointRange is the waypoint autoscaler's replica range and CPU target:
// at least 2 replicas, at most 20 and 70 % unless hpa says otherwise, max
// never below min.
func waypointRange(hpa *picchuv1alpha1.WaypointHPA) (lo, hi, cpu int32) {
	lo, hi, cpu = waypointMinReplicas, waypointMaxReplicas, waypointCPUPercent
	if hpa != nil {
		lo = max(ptr.Deref(hpa.MinReplicas, lo), waypointMinReplicas)
		hi = ptr.Deref(hpa.MaxReplicas, hi)
		cpu = ptr.Deref(hpa.TargetCPUUtilizationPercentage, cpu)
	}
	return lo, max(hi, lo), cpu
}

// WaypointDisruptionBudget keeps all but one of the waypoint's minimum
// replicas (at least one) available.
func WaypointDisruptionBudget(app, target string, hpa *picchuv1alpha1.WaypointHPA) *policyv1.PodDisruptionBudget {
	lo, _, _ := waypointRange(hpa)
	minAvailable := intstr.FromInt32(max(lo-1, 1))
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: WaypointName, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{labelGatewayName: WaypointName}},
		},
	}
}

// WaypointAutoscaler scales the waypoint's Deployment (which Istio makes
// from the Gateway) on CPU.
func WaypointAutoscaler(app, target string, hpa *picchuv1alpha1.WaypointHPA) *autoscalingv2.HorizontalPodAutoscaler {
	lo, hi, cpu := waypointRange(hpa)
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: WaypointName, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: WaypointName},
			MinReplicas:    &lo,
			MaxReplicas:    hi,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{
					Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &cpu,
				}},
			}},
		},
	}
}
