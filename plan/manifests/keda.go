package manifests

import (
	"fmt"
	"strconv"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// DatadogMetricKind is the Datadog Operator's DatadogMetric, the query the
// Datadog Cluster Agent serves as an external metric. Picchu does not build
// against its Go module: its objects are written unstructured.
var DatadogMetricKind = schema.GroupVersionKind{Group: "datadoghq.com", Version: "v1alpha1", Kind: "DatadogMetric"}

// ServiceAccountTokenName is the Secret holding a long-lived token of the
// app's service account: KEDA's datadog triggers show it to the Datadog
// Cluster Agent, which lets the account read external metrics
// (ExternalMetricsRole).
const ServiceAccountTokenName = "service-account-token"

// DatadogClusterAgent is where KEDA's datadog triggers reach the Datadog
// Cluster Agent's metrics API. Empty fields take their defaults.
type DatadogClusterAgent struct {
	// Namespace of the agent ("datadog").
	Namespace string
	// Service and Port of its metrics API ("datadog-cluster-agent-metrics-api", 8443).
	Service string
	Port    int
	// VerifyTLS checks the agent's certificate. The agent serves one it
	// makes itself unless it is given one, so it is not checked by default
	// (KEDA's unsafeSsl).
	VerifyTLS bool
}

// The defaults of DatadogClusterAgent.
const (
	DefaultDatadogNamespace = "datadog"
	DefaultDatadogService   = "datadog-cluster-agent-metrics-api"
	DefaultDatadogPort      = 8443
)

// datadogTrigger is KEDA's trigger type for Datadog.
const datadogTrigger = "datadog"

// DatadogConfigName names a build's ConfigMap of Datadog Cluster Agent
// settings, "dd-cfg-<tag>".
func DatadogConfigName(tag string) string { return "dd-cfg-" + tag }

// HasDatadogTrigger says the build scales with KEDA and one of its
// triggers is of type datadog.
func HasDatadogTrigger(s Scaler) bool {
	if s.Scale.KedaWorker == nil {
		return false
	}
	for _, t := range s.Scale.KedaWorker.Triggers {
		if t.Type == datadogTrigger {
			return true
		}
	}
	return false
}

// DatadogConfig is the build's ConfigMap "dd-cfg-<tag>" of the settings
// KEDA's datadog scaler takes from its TriggerAuthentication to ask the
// Datadog Cluster Agent (keys named as KEDA's parameters:
// datadogNamespace, datadogMetricsService, datadogMetricsServicePort,
// unsafeSsl, and authMode "bearer", the service account token), or nil
// when no trigger of the build is of type datadog.
func DatadogConfig(s Scaler) *corev1.ConfigMap {
	if !HasDatadogTrigger(s) {
		return nil
	}
	a := s.DatadogAgent
	ns, svc, port := a.Namespace, a.Service, a.Port
	if ns == "" {
		ns = DefaultDatadogNamespace
	}
	if svc == "" {
		svc = DefaultDatadogService
	}
	if port <= 0 {
		port = DefaultDatadogPort
	}
	m := s.meta()
	m.Name = DatadogConfigName(s.Tag)
	return &corev1.ConfigMap{
		ObjectMeta: m,
		Data: map[string]string{
			"datadogNamespace":          ns,
			"datadogMetricsService":     svc,
			"datadogMetricsServicePort": strconv.Itoa(port),
			"unsafeSsl":                 strconv.FormatBool(!a.VerifyTLS),
			"authMode":                  "bearer",
		},
	}
}

// datadogConfigKeys are DatadogConfig's keys, each the parameter of the
// TriggerAuthentication it fills.
var datadogConfigKeys = []string{"datadogNamespace", "datadogMetricsService", "datadogMetricsServicePort", "unsafeSsl", "authMode"}

// ServiceAccountToken is the app's Secret ServiceAccountTokenName, which
// Kubernetes fills with a token of the app's service account. It carries
// the app's labels, not a build's: builds share it, and it goes with the
// app's namespace.
func ServiceAccountToken(app, target string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: ServiceAccountTokenName, Namespace: picchuv1alpha1.AppNamespace(app, target), Labels: appLabels(app, target),
			Annotations: map[string]string{corev1.ServiceAccountNameKey: app},
		},
		Type: corev1.SecretTypeServiceAccountToken,
	}
}

// DatadogMetric is the build's DatadogMetric "<tag>": the requests per
// second its pods receive, as Datadog's Istio integration counts them,
//
//	sum:istio.mesh.request.count.total{destination_workload:<tag>,destination_workload_namespace:<namespace>}.as_rate()
//
// so that a datadog trigger can scale on scale.targetRequestsRate per pod.
// Nil unless the build scales with KEDA and sets targetRequestsRate.
func DatadogMetric(s Scaler) *unstructured.Unstructured {
	if s.Scale.KedaWorker == nil || s.Scale.TargetRequestsRate == nil {
		return nil
	}
	m := s.meta()
	query := fmt.Sprintf("sum:istio.mesh.request.count.total{destination_workload:%s,destination_workload_namespace:%s}.as_rate()", s.Tag, m.Namespace)
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"query": query}}}
	u.SetGroupVersionKind(DatadogMetricKind)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	return u
}

// datadogMetricTrigger fills in a datadog trigger that names no query and
// no DatadogMetric (which KEDA would reject) so that it reads the build's
// DatadogMetric through the Cluster Agent, for the request-rate target
// when it sets no targetValue. Other triggers are returned as they are.
func datadogMetricTrigger(s Scaler, tr kedav1alpha1.ScaleTriggers) kedav1alpha1.ScaleTriggers {
	md := tr.Metadata
	if tr.Type != datadogTrigger || DatadogMetric(s) == nil || md["query"] != "" || md["datadogMetricName"] != "" {
		return tr
	}
	md["useClusterAgentProxy"] = "true"
	md["datadogMetricName"] = s.Tag
	md["datadogMetricNamespace"] = picchuv1alpha1.AppNamespace(s.App, s.Target)
	if md["targetValue"] == "" {
		if v, err := quantityString(*s.Scale.TargetRequestsRate); err == nil {
			md["targetValue"] = v
		}
	}
	return tr
}

// ScalesOnClusterPrometheus says the build is an ambient-mesh one with a
// request-rate target and the operator knows the cluster's Prometheus
// (and neither worker nor kedaWorker is set, which come first): it scales
// with PrometheusScaledObject instead of an HorizontalPodAutoscaler.
func ScalesOnClusterPrometheus(s Scaler) bool {
	return s.Ambient && s.ClusterPrometheus != "" && s.Scale.TargetRequestsRate != nil &&
		s.Scale.Worker == nil && s.Scale.KedaWorker == nil
}

// RequestsRateQuery is the Prometheus query of the requests per second a
// build's pods receive: Istio's istio_requests_total for its workload (its
// ReplicaSet, named after the tag) and namespace, over 2 minutes, as the
// destination side (its waypoint, or its own sidecar) reports them, so
// that a request a sidecar's caller also reports is counted once.
func RequestsRateQuery(app, target, tag string) string {
	return fmt.Sprintf(`sum(rate(istio_requests_total{destination_workload_namespace=%q,destination_workload=%q,reporter!="source"}[2m]))`,
		picchuv1alpha1.AppNamespace(app, target), tag)
}

// PrometheusScaledObject is the KEDA ScaledObject of a build that
// ScalesOnClusterPrometheus: a prometheus trigger asking the cluster's
// Prometheus for RequestsRateQuery against targetRequestsRate per pod,
// and cpu and memory triggers for the utilisation targets that are set,
// over the build's replica range on this cluster (at least 1, as its HPA
// would have). Nil when it does not scale so.
func PrometheusScaledObject(s Scaler) (*kedav1alpha1.ScaledObject, error) {
	if !ScalesOnClusterPrometheus(s) {
		return nil, nil
	}
	threshold, err := quantityString(*s.Scale.TargetRequestsRate)
	if err != nil {
		return nil, err
	}
	triggers := []kedav1alpha1.ScaleTriggers{{
		Type: "prometheus",
		Metadata: map[string]string{
			"serverAddress": s.ClusterPrometheus,
			"query":         RequestsRateQuery(s.App, s.Target, s.Tag),
			"threshold":     threshold,
		},
	}}
	for _, r := range []struct {
		kind   string
		target *int32
	}{{"cpu", s.Scale.TargetCPUUtilizationPercentage}, {"memory", s.Scale.TargetMemoryUtilizationPercentage}} {
		if r.target != nil {
			triggers = append(triggers, kedav1alpha1.ScaleTriggers{
				Type: r.kind, MetricType: autoscalingv2.UtilizationMetricType,
				Metadata: map[string]string{"value": strconv.Itoa(int(*r.target))},
			})
		}
	}
	lo := max(s.Min, 1)
	hi := max(s.Max, lo)
	return &kedav1alpha1.ScaledObject{
		ObjectMeta: s.meta(),
		Spec: kedav1alpha1.ScaledObjectSpec{
			ScaleTargetRef:  &kedav1alpha1.ScaleTarget{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: s.Tag},
			MinReplicaCount: &lo, MaxReplicaCount: &hi, Triggers: triggers,
		},
	}, nil
}

// quantityString is a quantity such as "500m" as the decimal number KEDA
// reads ("0.5").
func quantityString(s string) (string, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return "", fmt.Errorf("scale.targetRequestsRate %q: %w", s, err)
	}
	return strconv.FormatFloat(q.AsApproximateFloat64(), 'f', -1, 64), nil
}
