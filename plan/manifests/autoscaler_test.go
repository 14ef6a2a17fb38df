package manifests_test

import (
	"context"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

func TestHorizontalPodAutoscaler_CPUMemoryAndRequestRate(t *testing.T) {
	rate := "50"
	s := manifests.Scaler{App: "shop", Target: "production", Tag: "v2", Min: 0, Max: 20, Scale: picchuv1alpha1.ScaleInfo{
		TargetCPUUtilizationPercentage: ptr(int32(70)), TargetMemoryUtilizationPercentage: ptr(int32(80)),
		TargetRequestsRate: &rate, RequestsRateMetric: "istio_requests_per_second",
	}}
	hpa, err := manifests.HorizontalPodAutoscaler(s)
	if err != nil {
		t.Fatal(err)
	}
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "ReplicaSet" || ref.Name != "v2" || ref.APIVersion != "apps/v1" || hpa.Namespace != "shop-production" {
		t.Errorf("target %+v in %s", ref, hpa.Namespace)
	}
	if *hpa.Spec.MinReplicas != 1 || hpa.Spec.MaxReplicas != 20 {
		t.Errorf("range %d..%d, want 1..20 (an HPA needs a min of at least 1)", *hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	m := hpa.Spec.Metrics
	if len(m) != 3 || m[0].Resource.Name != "cpu" || *m[0].Resource.Target.AverageUtilization != 70 ||
		m[1].Resource.Name != "memory" || m[2].Type != autoscalingv2.PodsMetricSourceType ||
		m[2].Pods.Metric.Name != "istio_requests_per_second" || m[2].Pods.Target.AverageValue.String() != "50" {
		t.Errorf("metrics %+v", m)
	}
	if none, err := manifests.HorizontalPodAutoscaler(manifests.Scaler{Tag: "v2"}); none != nil || err != nil {
		t.Errorf("no target: %v, %v", none, err)
	}
	bad := "fast"
	s.Scale.TargetRequestsRate = &bad
	if _, err := manifests.HorizontalPodAutoscaler(s); err == nil {
		t.Error("an unparsable targetRequestsRate was accepted")
	}
}

func TestScaledObject_TriggersWithoutAuthUseThePodIdentity(t *testing.T) {
	keda := &picchuv1alpha1.KedaScaleInfo{
		CooldownPeriod: ptr(int32(60)),
		Triggers: []kedav1alpha1.ScaleTriggers{
			{Type: "aws-sqs-queue", Metadata: map[string]string{"queueURL": "https://sqs/q", "queueLength": "5"}},
			{Type: "cron", Metadata: map[string]string{"timezone": "UTC"}, AuthenticationRef: &kedav1alpha1.AuthenticationRef{Name: "own"}},
		},
	}
	s := manifests.Scaler{App: "jobs", Target: "production", Tag: "v3", Min: 0, Max: 30, Scale: picchuv1alpha1.ScaleInfo{KedaWorker: keda}}
	so := manifests.ScaledObject(s)
	if *so.Spec.MinReplicaCount != 0 || *so.Spec.MaxReplicaCount != 30 || so.Spec.ScaleTargetRef.Kind != "ReplicaSet" || *so.Spec.CooldownPeriod != 60 {
		t.Errorf("spec %+v", so.Spec)
	}
	tr := so.Spec.Triggers
	if tr[0].AuthenticationRef.Name != "v3" || tr[0].Metadata["identityOwner"] != "pod" || tr[1].AuthenticationRef.Name != "own" || tr[1].Metadata["identityOwner"] != "" {
		t.Errorf("triggers %+v", tr)
	}
	if _, ok := keda.Triggers[0].Metadata["identityOwner"]; ok || keda.Triggers[0].AuthenticationRef != nil {
		t.Error("ScaledObject modified the Revision's triggers")
	}
	if ta := manifests.TriggerAuthentication(s); ta.Spec.PodIdentity.Provider != kedav1alpha1.PodIdentityProviderAws || ta.Name != "v3" {
		t.Errorf("trigger authentication %+v", ta)
	}
	secs, disruption := "2.5", "10%"
	wpa := manifests.WorkerPodAutoscaler(manifests.Scaler{App: "jobs", Target: "production", Tag: "v3", Min: 1, Max: 9, Scale: picchuv1alpha1.ScaleInfo{
		Worker: &picchuv1alpha1.WorkerScaleInfo{QueueURI: "https://sqs/q", TargetMessagesPerWorker: ptr(int32(4)),
			SecondsToProcessOneJobString: &secs, MaxDisruption: &disruption},
	}})
	spec := wpa.Object["spec"].(map[string]any)
	if wpa.GetKind() != "WorkerPodAutoScaler" || spec["replicaSetName"] != "v3" || spec["maxReplicas"] != int64(9) ||
		spec["secondsToProcessOneJob"] != 2.5 || spec["targetMessagesPerWorker"] != int64(4) || spec["maxDisruption"] != "10%" {
		t.Errorf("worker pod autoscaler %v", wpa.Object)
	}
}

// TestAutoscalers_TheTargetAcceptsThem applies the HPA and the KEDA objects
// to a target API server with KEDA's real CRDs.
func TestAutoscalers_TheTargetAcceptsThem(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	if err := c.Apply(ctx, manifests.AppNamespace("jobs", "production", manifests.MeshSidecar)); err != nil {
		t.Fatal(err)
	}
	s := manifests.Scaler{App: "jobs", Target: "production", Tag: "v3", Min: 2, Max: 30, Scale: picchuv1alpha1.ScaleInfo{
		TargetCPUUtilizationPercentage: ptr(int32(70)),
		KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{
			{Type: "aws-sqs-queue", Metadata: map[string]string{"queueURL": "https://sqs/q", "queueLength": "5"}},
		}},
	}}
	hpa, err := manifests.HorizontalPodAutoscaler(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{hpa, manifests.ScaledObject(s), manifests.TriggerAuthentication(s)} {
		if err := c.Apply(ctx, obj); err != nil {
			t.Errorf("the target rejected %T: %v", obj, err)
		}
	}
	got := &kedav1alpha1.ScaledObject{}
	if err := tgt.Client.Get(ctx, client.ObjectKey{Namespace: "jobs-production", Name: "v3"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Triggers[0].AuthenticationRef.Name != "v3" {
		t.Errorf("stored triggers %+v", got.Spec.Triggers)
	}
}
