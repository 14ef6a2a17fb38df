package manifests_test

import (
	"context"
	"reflect"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/applier"
	"github.com/medium/picchu/plan/manifests"
)

func kedaScaler(triggers ...kedav1alpha1.ScaleTriggers) manifests.Scaler {
	return manifests.Scaler{App: "jobs", Target: "production", Tag: "v3", Min: 1, Max: 10, Scale: picchuv1alpha1.ScaleInfo{
		KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: triggers},
	}}
}

func TestDatadogConfig_OnlyForADatadogTrigger(t *testing.T) {
	sqs := kedav1alpha1.ScaleTriggers{Type: "aws-sqs-queue", Metadata: map[string]string{"queueURL": "q"}}
	dd := kedav1alpha1.ScaleTriggers{Type: "datadog", Metadata: map[string]string{"query": "avg:q{*}", "queryValue": "5"}}
	for _, tc := range []struct {
		name  string
		s     manifests.Scaler
		agent manifests.DatadogClusterAgent
		want  map[string]string
	}{
		{name: "no kedaWorker", s: manifests.Scaler{Tag: "v3"}},
		{name: "no datadog trigger", s: kedaScaler(sqs)},
		{name: "defaults", s: kedaScaler(sqs, dd), want: map[string]string{
			"datadogNamespace": "datadog", "datadogMetricsService": "datadog-cluster-agent-metrics-api",
			"datadogMetricsServicePort": "8443", "unsafeSsl": "true", "authMode": "bearer",
		}},
		{name: "settings", s: kedaScaler(dd), agent: manifests.DatadogClusterAgent{Namespace: "dd", Service: "api", Port: 443, VerifyTLS: true},
			want: map[string]string{
				"datadogNamespace": "dd", "datadogMetricsService": "api", "datadogMetricsServicePort": "443", "unsafeSsl": "false", "authMode": "bearer",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.DatadogAgent = tc.agent
			cm := manifests.DatadogConfig(tc.s)
			ta := manifests.TriggerAuthentication(tc.s)
			if tc.want == nil {
				if cm != nil || ta.Spec.ConfigMapTargetRef != nil || ta.Spec.SecretTargetRef != nil {
					t.Errorf("config %v, trigger authentication %+v", cm, ta.Spec)
				}
				return
			}
			if cm.Name != "dd-cfg-v3" || cm.Namespace != "jobs-production" || cm.Labels[picchuv1alpha1.LabelTag] != "v3" || !reflect.DeepEqual(cm.Data, tc.want) {
				t.Errorf("config %s/%s %v %v", cm.Namespace, cm.Name, cm.Labels, cm.Data)
			}
			if len(ta.Spec.ConfigMapTargetRef) != len(tc.want) {
				t.Errorf("config refs %+v", ta.Spec.ConfigMapTargetRef)
			}
			for _, ref := range ta.Spec.ConfigMapTargetRef {
				if ref.Name != "dd-cfg-v3" || ref.Key != ref.Parameter || tc.want[ref.Key] == "" {
					t.Errorf("config ref %+v", ref)
				}
			}
			want := []kedav1alpha1.AuthSecretTargetRef{{Parameter: "token", Name: "service-account-token", Key: "token"}}
			if !reflect.DeepEqual(ta.Spec.SecretTargetRef, want) || ta.Spec.PodIdentity.Provider != kedav1alpha1.PodIdentityProviderAws {
				t.Errorf("trigger authentication %+v", ta.Spec)
			}
		})
	}
}

func TestServiceAccountToken(t *testing.T) {
	s := manifests.ServiceAccountToken("jobs", "production")
	if s.Name != "service-account-token" || s.Namespace != "jobs-production" || s.Type != corev1.SecretTypeServiceAccountToken ||
		s.Annotations[corev1.ServiceAccountNameKey] != "jobs" || s.Labels[picchuv1alpha1.LabelTag] != "" || s.Labels[picchuv1alpha1.LabelApp] != "jobs" {
		t.Errorf("token secret %+v", s)
	}
}

func TestDatadogMetric_ForTheRequestRateOfAKEDABuild(t *testing.T) {
	rate := "500m"
	dd := kedav1alpha1.ScaleTriggers{Type: "datadog", Metadata: map[string]string{}}
	for _, tc := range []struct {
		name  string
		s     manifests.Scaler
		rate  *string
		want  string
		metas []map[string]string
	}{
		{name: "no rate", s: kedaScaler(dd), metas: []map[string]string{{"identityOwner": "pod"}}},
		{name: "no kedaWorker", s: manifests.Scaler{App: "jobs", Target: "production", Tag: "v3"}, rate: &rate},
		{
			name: "rate", s: kedaScaler(dd,
				kedav1alpha1.ScaleTriggers{Type: "datadog", Metadata: map[string]string{"query": "avg:x{*}", "queryValue": "3"}},
				kedav1alpha1.ScaleTriggers{Type: "datadog", Metadata: map[string]string{"targetValue": "7"}, AuthenticationRef: &kedav1alpha1.AuthenticationRef{Name: "own"}},
				kedav1alpha1.ScaleTriggers{Type: "cron", Metadata: map[string]string{"timezone": "UTC"}},
			), rate: &rate,
			want: "sum:istio.mesh.request.count.total{destination_workload:v3,destination_workload_namespace:jobs-production}.as_rate()",
			metas: []map[string]string{
				{"identityOwner": "pod", "useClusterAgentProxy": "true", "datadogMetricName": "v3", "datadogMetricNamespace": "jobs-production", "targetValue": "0.5"},
				{"identityOwner": "pod", "query": "avg:x{*}", "queryValue": "3"},
				{"targetValue": "7", "useClusterAgentProxy": "true", "datadogMetricName": "v3", "datadogMetricNamespace": "jobs-production"},
				{"identityOwner": "pod", "timezone": "UTC"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Scale.TargetRequestsRate = tc.rate
			dm := manifests.DatadogMetric(tc.s)
			if tc.want == "" {
				if dm != nil {
					t.Errorf("DatadogMetric %v", dm.Object)
				}
			} else {
				q, _, _ := unstructuredString(dm.Object, "spec", "query")
				if dm.GetKind() != "DatadogMetric" || dm.GetAPIVersion() != "datadoghq.com/v1alpha1" || dm.GetName() != "v3" ||
					dm.GetNamespace() != "jobs-production" || dm.GetLabels()[picchuv1alpha1.LabelTag] != "v3" || q != tc.want {
					t.Errorf("DatadogMetric %v", dm.Object)
				}
			}
			so := manifests.ScaledObject(tc.s)
			if so == nil {
				return
			}
			var got []map[string]string
			for _, tr := range so.Spec.Triggers {
				got = append(got, tr.Metadata)
			}
			if !reflect.DeepEqual(got, tc.metas) {
				t.Errorf("trigger metadata\n got %v\nwant %v", got, tc.metas)
			}
			if len(dd.Metadata) != 0 {
				t.Errorf("the Revision's trigger was modified: %v", dd.Metadata)
			}
		})
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

func TestPrometheusScaledObject_AmbientRequestRate(t *testing.T) {
	rate, bad := "2500m", "fast"
	base := func() manifests.Scaler {
		return manifests.Scaler{App: "shop", Target: "production", Tag: "v2", Min: 0, Max: 6, Ambient: true,
			ClusterPrometheus: "http://prometheus.monitoring:9090",
			Scale:             picchuv1alpha1.ScaleInfo{TargetRequestsRate: &rate, TargetCPUUtilizationPercentage: ptr(int32(70))}}
	}
	for _, tc := range []struct {
		name   string
		change func(*manifests.Scaler)
		want   bool
	}{
		{name: "ambient, rate and Prometheus", change: func(*manifests.Scaler) {}, want: true},
		{name: "sidecar", change: func(s *manifests.Scaler) { s.Ambient = false }},
		{name: "no Prometheus", change: func(s *manifests.Scaler) { s.ClusterPrometheus = "" }},
		{name: "no rate", change: func(s *manifests.Scaler) { s.Scale.TargetRequestsRate = nil }},
		{name: "kedaWorker first", change: func(s *manifests.Scaler) { s.Scale.KedaWorker = &picchuv1alpha1.KedaScaleInfo{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(&s)
			so, err := manifests.PrometheusScaledObject(s)
			if err != nil || manifests.ScalesOnClusterPrometheus(s) != tc.want || (so != nil) != tc.want {
				t.Fatalf("scaled object %v, %v", so, err)
			}
			if !tc.want {
				return
			}
			if *so.Spec.MinReplicaCount != 1 || *so.Spec.MaxReplicaCount != 6 || so.Spec.ScaleTargetRef.Name != "v2" || so.Spec.ScaleTargetRef.Kind != "ReplicaSet" {
				t.Errorf("spec %+v", so.Spec)
			}
			want := []kedav1alpha1.ScaleTriggers{
				{Type: "prometheus", Metadata: map[string]string{
					"serverAddress": "http://prometheus.monitoring:9090", "threshold": "2.5",
					"query": `sum(rate(istio_requests_total{destination_workload_namespace="shop-production",destination_workload="v2",reporter!="source"}[2m]))`,
				}},
				{Type: "cpu", MetricType: "Utilization", Metadata: map[string]string{"value": "70"}},
			}
			if !reflect.DeepEqual(so.Spec.Triggers, want) {
				t.Errorf("triggers\n got %+v\nwant %+v", so.Spec.Triggers, want)
			}
		})
	}
	s := base()
	s.Scale.TargetRequestsRate = &bad
	if _, err := manifests.PrometheusScaledObject(s); err == nil {
		t.Error("an unparsable targetRequestsRate was accepted")
	}
}

// TestKEDADatadogAndAmbientObjects_TheTargetAcceptsThem applies the
// Datadog and ambient KEDA objects to a target with KEDA's real CRDs.
func TestKEDADatadogAndAmbientObjects_TheTargetAcceptsThem(t *testing.T) {
	ctx := context.Background()
	tgt := env.Targets[0]
	c := applier.NewCluster(tgt.Cluster, tgt.Client, tgt.Client, "", log.Log)
	for _, ns := range []string{"dd-production", "amb-production"} {
		if err := client.IgnoreAlreadyExists(tgt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			t.Fatal(err)
		}
	}
	rate := "40"
	s := manifests.Scaler{App: "dd", Target: "production", Tag: "v1", Min: 1, Max: 4, Scale: picchuv1alpha1.ScaleInfo{
		TargetRequestsRate: &rate,
		KedaWorker: &picchuv1alpha1.KedaScaleInfo{Triggers: []kedav1alpha1.ScaleTriggers{
			{Type: "datadog", Metadata: map[string]string{}},
		}},
	}}
	amb := manifests.Scaler{App: "amb", Target: "production", Tag: "v1", Min: 1, Max: 4, Ambient: true, ClusterPrometheus: "http://prom:9090",
		Scale: picchuv1alpha1.ScaleInfo{TargetRequestsRate: &rate, TargetMemoryUtilizationPercentage: ptr(int32(80))}}
	ambient, err := manifests.PrometheusScaledObject(amb)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		manifests.ServiceAccountToken("dd", "production"), manifests.DatadogConfig(s),
		manifests.TriggerAuthentication(s), manifests.ScaledObject(s), ambient,
	} {
		if err := c.Apply(ctx, obj); err != nil {
			t.Errorf("the target rejected %T: %v", obj, err)
		}
	}
}
