package manifests_test

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
	"github.com/medium/picchu/test/integration/harness"
)

var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 1}, harness.KeepEnv(&env))
}

func target() *picchuv1alpha1.RevisionTarget {
	seven := int32(7)
	return &picchuv1alpha1.RevisionTarget{
		Name: "production", Fleet: "production",
		Ports: []picchuv1alpha1.PortInfo{
			{Name: "http", Port: 80, ContainerPort: 8080, Protocol: corev1.ProtocolTCP, Mode: picchuv1alpha1.PortModePublic},
			{Name: "status", Port: 4444, ContainerPort: 4444, Protocol: corev1.ProtocolTCP, Mode: picchuv1alpha1.PortModeLocal},
		},
		Env:          []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
		VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}},
		Volumes:      []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Sidecars: []corev1.Container{{
			Name: "proxy", Image: "proxy:1",
			Env:          []corev1.EnvVar{{Name: "OWN", Value: "1"}},
			VolumeMounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/proxy-cache"}},
		}},
		PodAnnotations:        map[string]string{"go.medium.engineering/PodTerminationGracePeriodSeconds": "45", "team": "shop"},
		KarpenterDoNotDisrupt: "30m",
		AWS:                   picchuv1alpha1.AWSInfo{IAM: picchuv1alpha1.IAMInfo{RoleARN: "arn:aws:iam::1:role/shop"}},
		TopologySpreadConstraint: &corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule,
		},
		PodDisruptionBudget: &policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(2))},
		Scale:               picchuv1alpha1.ScaleInfo{Min: &seven, MinReadySeconds: 5},
	}
}

func ptr[T any](v T) *T { return &v }

func build() manifests.Build {
	return manifests.Build{
		App: "shop", Target: "production", Tag: "v1", Image: "shop:v1", Spec: target(), Autoscaler: "hpa",
		ConfigMaps: []string{"shop-v1-config"}, Secrets: []string{"shop-v1-secrets"},
	}
}

func Test_ReplicaSet(t *testing.T) {
	rs := manifests.ReplicaSet(build())
	pod := rs.Spec.Template.Spec
	if rs.Name != "v1" || rs.Namespace != "shop-production" || rs.Spec.Replicas != nil || rs.Spec.MinReadySeconds != 5 {
		t.Errorf("metadata/spec: %s/%s replicas %v (set by ApplyReplicas only) minReady %d", rs.Namespace, rs.Name, rs.Spec.Replicas, rs.Spec.MinReadySeconds)
	}
	if rs.Annotations[manifests.AnnotationAutoscaler] != "hpa" {
		t.Errorf("annotations %v", rs.Annotations)
	}
	tplLabels := rs.Spec.Template.Labels
	for k, v := range rs.Spec.Selector.MatchLabels {
		if tplLabels[k] != v {
			t.Errorf("selector %s=%s not on the pods", k, v)
		}
	}
	if _, ok := rs.Spec.Selector.MatchLabels["version"]; ok {
		t.Errorf("selector has Istio's version label: %v", rs.Spec.Selector.MatchLabels)
	}
	if tplLabels[picchuv1alpha1.LabelPodTag] != "v1" || tplLabels["app"] != "shop" || tplLabels["version"] != "v1" {
		t.Errorf("pod labels %v lack the tag or Istio labels", tplLabels)
	}
	a := rs.Spec.Template.Annotations
	if a["team"] != "shop" || a["karpenter.sh/do-not-disrupt"] != "30m" || a["ad.datadoghq.com/tolerate-unready"] != "true" {
		t.Errorf("pod annotations %v", a)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 45 {
		t.Errorf("grace period %v, want 45", pod.TerminationGracePeriodSeconds)
	}
	if len(pod.Containers) != 2 || pod.Containers[0].Name != "shop" || pod.Containers[0].Image != "shop:v1" {
		t.Fatalf("containers %+v", pod.Containers)
	}
	app, sidecar := pod.Containers[0], pod.Containers[1]
	if app.LivenessProbe == nil || app.LivenessProbe.HTTPGet.Path != "/running" || app.LivenessProbe.FailureThreshold != 7 ||
		app.ReadinessProbe == nil || app.ReadinessProbe.FailureThreshold != 3 || app.ReadinessProbe.HTTPGet.Port.StrVal != "status" {
		t.Errorf("default probes on the status port: liveness %+v readiness %+v", app.LivenessProbe, app.ReadinessProbe)
	}
	if got := names(sidecar.Env); !reflect.DeepEqual(got, []string{"OWN", "MODE"}) {
		t.Errorf("sidecar env %v: want its own and the app's", got)
	}
	if len(sidecar.VolumeMounts) != 2 || len(sidecar.EnvFrom) != 2 || len(app.EnvFrom) != 2 {
		t.Errorf("sidecar mounts %v envFrom %v, app envFrom %v", sidecar.VolumeMounts, sidecar.EnvFrom, app.EnvFrom)
	}
	if pod.ServiceAccountName != "shop" || pod.DNSConfig == nil || *pod.DNSConfig.Options[0].Value != "1" {
		t.Errorf("service account %q dns %+v", pod.ServiceAccountName, pod.DNSConfig)
	}
	if tsc := pod.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[0].LabelSelector == nil {
		t.Errorf("topology spread %+v", tsc)
	}
	if target().TopologySpreadConstraint.WhenUnsatisfiable != corev1.DoNotSchedule {
		t.Errorf("the builder changed its input")
	}
}

func names(env []corev1.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name)
	}
	return out
}

// TestPlans_ApplyToARealCluster applies the app's objects and a build's
// ReplicaSet to a target API server, which validates them, and checks what
// it stored.
func TestPlans_ApplyToARealCluster(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	spec := target()
	objects := []client.Object{
		manifests.AppNamespace("shop", "production", manifests.MeshSidecar),
		manifests.ServiceAccount("shop", "production", spec.AWS.IAM.RoleARN),
		manifests.Service("shop", "production", spec.Ports),
		manifests.PodDisruptionBudget("shop", "production", spec.PodDisruptionBudget),
		manifests.ReplicaSet(build()),
	}
	for _, obj := range objects {
		if err := c.Apply(ctx, obj); err != nil {
			t.Fatalf("the target rejected %T: %v", obj, err)
		}
	}
	ns := "shop-production"
	got := &corev1.Namespace{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Name: ns}, got); err != nil || got.Labels["istio-injection"] != "enabled" {
		t.Errorf("namespace labels %v (%v)", got.Labels, err)
	}
	sa := &corev1.ServiceAccount{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, sa); err != nil || sa.Annotations["eks.amazonaws.com/role-arn"] != spec.AWS.IAM.RoleARN {
		t.Errorf("service account annotations %v (%v)", sa.Annotations, err)
	}
	svc := &corev1.Service{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, svc); err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[0].TargetPort.StrVal != "http" || svc.Spec.Ports[1].Port != 4444 {
		t.Errorf("service ports %+v", svc.Spec.Ports)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, pdb); err != nil ||
		pdb.Spec.MinAvailable.IntVal != 2 || pdb.Spec.MaxUnavailable != nil || pdb.Spec.Selector.MatchLabels[picchuv1alpha1.LabelApp] != "shop" {
		t.Errorf("pdb %+v (%v)", pdb.Spec, err)
	}
	if err := c.ApplyReplicas(ctx, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), ns, "v1", 3); err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "v1"}, rs); err != nil {
		t.Fatal(err)
	}
	if *rs.Spec.Replicas != 3 || rs.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort != 8080 {
		t.Errorf("stored replicaset: replicas %d ports %+v", *rs.Spec.Replicas, rs.Spec.Template.Spec.Containers[0].Ports)
	}

	// Without a PDB spec, at most 10% of the pods may be unavailable.
	if def := manifests.PodDisruptionBudget("shop", "production", nil); def.Spec.MaxUnavailable.StrVal != "10%" {
		t.Errorf("default pdb %+v", def.Spec)
	}
}
