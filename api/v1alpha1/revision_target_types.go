package v1alpha1

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Router is what splits an app's traffic between its builds.
// +kubebuilder:validation:Enum=istio;gatewayAPI
type Router string

// The routers.
const (
	// RouterIstio routes with Istio's VirtualService and DestinationRule.
	RouterIstio Router = "istio"
	// RouterGatewayAPI routes with the Gateway API's HTTPRoute and GRPCRoute.
	RouterGatewayAPI Router = "gatewayAPI"
)

// RevisionTarget says how a build is delivered to one target: the fleet of
// clusters it runs on, its ports and routing, its release plan and scaling,
// its SLOs, and its pod.
//
// +kubebuilder:validation:XValidation:rule="!has(self.defaultIngressPorts) || self.defaultIngressPorts.all(k, has(self.ports) && self.ports.exists(p, p.name == self.defaultIngressPorts[k] && (!has(p.ingresses) || size(p.ingresses) == 0 || k in p.ingresses)))",message="each defaultIngressPorts entry must name a port of this target that is exposed on that ingress",fieldPath=".defaultIngressPorts"
// +kubebuilder:validation:XValidation:rule="!has(self.router) || self.router != 'gatewayAPI' || !has(self.istio)",message="istio settings (a build's traffic policy, the sidecar's egress hosts) are Istio's: remove them, or route this target with router istio",fieldPath=".istio"
// +kubebuilder:validation:XValidation:rule="!has(self.router) || self.router != 'gatewayAPI' || !has(self.ports) || self.ports.all(p, !has(p.istio) || !has(p.istio.http) || !has(p.istio.http.retries))",message="a port's istio.http.retries are Istio's: the Gateway API's standard routes have no retries; remove them, or route this target with router istio",fieldPath=".ports"
// +kubebuilder:validation:XValidation:rule="!has(self.router) || self.router != 'gatewayAPI' || !has(self.ports) || self.ports.all(p, !(p.name == 'grpc' || p.name.startsWith('grpc-')) || !has(p.istio) || !has(p.istio.http) || !has(p.istio.http.timeout) || size(p.istio.http.timeout) == 0 || p.istio.http.timeout == '0')",message="a gRPC port's istio.http.timeout is Istio's: the Gateway API's GRPCRoute has no timeout; remove it, or route this target with router istio",fieldPath=".ports"
// +kubebuilder:validation:XValidation:rule="!has(self.karpenterDoNotDisrupt) || !has(self.podAnnotations) || !('karpenter.sh/do-not-disrupt' in self.podAnnotations)",message="set karpenterDoNotDisrupt or the karpenter.sh/do-not-disrupt pod annotation, not both",fieldPath=".karpenterDoNotDisrupt"
type RevisionTarget struct {
	// name of the target, such as "production". The app runs in namespace
	// "<app>-<target>" on every cluster of the fleet. Unique within a Revision.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=62
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// fleet names the group of Clusters (label picchu.medium.engineering/fleet)
	// this target is deployed to. It is a label value of those Clusters and
	// the name of the Revision's label "fleet.picchu.medium.engineering/<fleet>".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Fleet string `json:"fleet"`
	// acceptanceTarget makes SLO alerts in this target count like production
	// ones when Picchu decides whether to fail the revision.
	// +optional
	AcceptanceTarget bool `json:"acceptanceTarget,omitempty"`

	// ports the app listens on and how each is exposed through the mesh and
	// the ingress gateways. Port names are unique, and so are containerPort
	// numbers per protocol (a container's ports are keyed by both). Two
	// ports with the same port number and protocol are accepted, with a
	// warning, as the original accepted them: the app's Service has that
	// port once, named after the first.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(p, self.exists_one(q, q.containerPort == p.containerPort && q.protocol == p.protocol))",message="containerPort numbers must be unique per protocol within a target: the container's ports are keyed by number and protocol"
	Ports []PortInfo `json:"ports,omitempty"`
	// defaultIngressPorts maps an ingress ("public" or "private") to the name
	// of the port that serves the ingress's default hosts. The webhook fills it
	// when an ingress has exactly one port, or one named "http".
	// +optional
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['public', 'private'])",message="keys must be ingress names: public or private"
	DefaultIngressPorts map[string]string `json:"defaultIngressPorts,omitempty"`

	// release is the plan for moving traffic to this build: strategy, steps,
	// schedule and how long a retired build is kept.
	// +optional
	// +kubebuilder:default={}
	Release ReleaseInfo `json:"release,omitempty"`
	// scale sets the replicas and the autoscaler of this build: the first
	// of worker, kedaWorker, ambient mesh with targetRequestsRate and the
	// cluster's Prometheus known (a KEDA ScaledObject on Prometheus), and
	// the CPU, memory and request-rate targets (an HPA).
	// +optional
	// +kubebuilder:default={}
	Scale ScaleInfo `json:"scale,omitempty"`
	// canary sends a small share of traffic to the build for a while before
	// the release ramp, watched by the SLOs' canary alerts.
	// +optional
	Canary Canary `json:"canary,omitempty"`
	// externalTest lets an outside test runner gate the release; it writes
	// started, completed and succeeded here.
	// +optional
	ExternalTest ExternalTest `json:"externalTest,omitempty"`

	// serviceLevelObjectives of the app. Picchu writes recording rules, Sloth
	// service levels and per-tag canary alerts from them, and fails the
	// revision when their alerts fire.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	ServiceLevelObjectives []ServiceLevelObjective `json:"serviceLevelObjectives,omitempty"`
	// serviceLevelObjectiveLabels are added to every SLO's rules, alerts and service levels.
	// +optional
	ServiceLevelObjectiveLabels ServiceLevelObjectiveLabels `json:"serviceLevelObjectiveLabels,omitempty"`
	// serviceMonitors are created in the app's namespace on every cluster.
	// +optional
	ServiceMonitors []ServiceMonitor `json:"serviceMonitors,omitempty"`
	// alertRules are legacy raw Prometheus rules, written to a PrometheusRule
	// named after the app. Prefer serviceLevelObjectives. Every alert they
	// fire carries the label namespace, set by Picchu to the app's
	// namespace, which builds are judged by; recording rules, the label
	// namespace or the cluster label, another app's name as the label app,
	// and expressions that write namespace or the cluster label are
	// refused (docs/security.md).
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:XValidation:rule="self.all(r, !has(r.record) && (!has(r.labels) || !('namespace' in r.labels)))",message="alertRules may not record series nor set the label namespace: Picchu sets namespace to the app's own, which builds are judged by"
	AlertRules []monitoringv1.Rule `json:"alertRules,omitempty"`
	// datadogMonitoring judges the build by Datadog monitors instead of, or as well as, Prometheus alerts.
	// +optional
	DatadogMonitoring DatadogMonitoring `json:"datadogMonitoring,omitempty"`
	// releaseSilences are Alertmanager silences Picchu creates while a
	// build of this target ramps (releasing), or retires with traffic left,
	// each ending a margin after the ramp is expected to end (extended while
	// it goes on, never more than --max-silence ahead), and expires as
	// soon as the release ends: released, failed, rolled back, or the
	// build gone. Each names the alerts it silences by alertname, and only
	// alerts of the app's namespace in this target are silenced; Picchu's
	// SLO and canary alerts never are (docs/silences.md). Needs
	// --alertmanager-address.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	ReleaseSilences []ReleaseSilence `json:"releaseSilences,omitempty"`

	// configSelector selects Secrets, ConfigMaps and ExternalSecrets
	// (external-secrets.io/v1, when the delivery cluster serves them) in the
	// Revision's namespace. Picchu copies each next to the build on every
	// cluster of the fleet: same name, its labels replaced by the build's,
	// its data (an ExternalSecret's spec) copied; a copy goes when the
	// selector no longer selects its source and with the build. Credentials
	// (a Cluster's Secret, a Secret labelled
	// picchu.medium.engineering/credentials, a service-account token) are
	// never copied. The build's containers get the ConfigMaps, the Secrets
	// and the Secret each ExternalSecret makes (its spec.target.name, else
	// its name) with envFrom, in that order. A cluster that does not serve
	// ExternalSecrets gets none: its pods refer to those Secrets as
	// optional, and the ReleaseManager's ExternalSecretsServed condition
	// names the cluster.
	// +optional
	ConfigSelector *metav1.LabelSelector `json:"configSelector,omitempty"`
	// aws holds AWS settings for the pods, such as an IAM role.
	// +optional
	AWS AWSInfo `json:"aws,omitempty"`
	// router is what splits the app's traffic between its builds on the
	// clusters of this target. "istio" (the default) writes an Istio
	// VirtualService and DestinationRule. "gatewayAPI" writes Gateway API
	// HTTPRoutes (GRPCRoutes for ports named grpc or grpc-*) that weigh a
	// Service per build, attached to the app's Service for traffic inside
	// the cluster (GAMMA) and to the Gateways the Cluster's ingresses name
	// ("<namespace>/<name>"). Settings only Istio has (istio, a port's
	// istio.http.retries, a gRPC port's timeout) are refused with
	// gatewayAPI. Changed on a live app, the new router's routes are
	// written with the current weights before the old router's are
	// removed.
	// +optional
	Router Router `json:"router,omitempty"`
	// istio holds mesh settings: the traffic policy of the build's subset and
	// the sidecar's egress hosts.
	// +optional
	Istio *IstioConfig `json:"istio,omitempty"`
	// ambientMesh runs the app in Istio's ambient mode (ztunnel and a waypoint)
	// instead of with sidecars.
	// +optional
	AmbientMesh bool `json:"ambientMesh,omitempty"`
	// waypointHPA sizes the waypoint proxy's autoscaler in ambient mode.
	// +optional
	WaypointHPA *WaypointHPA `json:"waypointHPA,omitempty"`
	// waypointResources are the waypoint proxy's resource requests and limits in ambient mode.
	// +optional
	WaypointResources *corev1.ResourceRequirements `json:"waypointResources,omitempty"`

	// env of the app container and every sidecar.
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// volumes of the pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// volumeMounts of the app container and every sidecar.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// sidecars are extra containers in the pod.
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`
	// resources of the app container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// livenessProbe of the app container. With a port named "status" and no
	// probe, Picchu probes GET /running on it.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// readinessProbe of the app container. With a port named "status" and no
	// probe, Picchu probes GET /running on it.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// lifecycle hooks of the app container.
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// affinity of the pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// priorityClassName of the pod: the name of a PriorityClass, a DNS subdomain.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// tolerations of the pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// topologySpreadConstraint of the pod. Its label selector defaults to the
	// build's pods.
	// +optional
	TopologySpreadConstraint *corev1.TopologySpreadConstraint `json:"topologySpreadConstraint,omitempty"`
	// podAnnotations are added to the pod template.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// karpenterDoNotDisrupt sets the pod annotation karpenter.sh/do-not-disrupt:
	// "true" protects pods for their whole life, a duration such as "30m"
	// protects them for that long after they start.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self == 'true' || (self.matches('^(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s'))",message="must be \"true\" or a duration such as 30m or 1h30m, no longer than 2562047h47m16.854775807s"
	KarpenterDoNotDisrupt string `json:"karpenterDoNotDisrupt,omitempty"`
	// serviceAccountName of the pod, a DNS subdomain; defaults to the app's
	// service account, which Picchu creates.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// schedulerName of the pod.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// podDisruptionBudget of the app; by default at most 10% of its pods may be unavailable.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnavailable) && has(self.minAvailable))",message="set maxUnavailable or minAvailable, not both"
	// +kubebuilder:validation:XValidation:rule="!has(self.maxUnavailable) || type(self.maxUnavailable) == string || (self.maxUnavailable >= -2147483648 && self.maxUnavailable <= 2147483647)",message="must be a percent such as 10% or a number of pods that fits in 32 bits",fieldPath=".maxUnavailable"
	// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || type(self.minAvailable) == string || (self.minAvailable >= -2147483648 && self.minAvailable <= 2147483647)",message="must be a percent such as 10% or a number of pods that fits in 32 bits",fieldPath=".minAvailable"
	PodDisruptionBudget *policyv1.PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
}

// Canary sends a share of traffic to a new build for a while before its release.
type Canary struct {
	// percent of traffic the canary takes. 0 (or less) disables the
	// canary; above release.max, or 100, it takes release.max (both
	// accepted with a warning, as the original accepted them).
	// +optional
	Percent int32 `json:"percent,omitempty"`
	// ttl is how long, in seconds, the canary runs before the release may
	// start. 0 (or less, accepted with a warning) disables the canary.
	// +optional
	TTL int64 `json:"ttl,omitempty"`
	// allowNoTraffic lets a canary pass that no request reached. By default
	// a canary holds, past its ttl, until the total query of each of its
	// enabled SLOs shows requests for its tag in Prometheus, and each of the
	// app's grouped Datadog monitors has a group for it: a canary that saw
	// no traffic has proven nothing. It also lets a build pass whose
	// baseline comparison (an SLO's serviceLevelIndicator.canary.baseline)
	// counted too few requests to tell, the build's status saying it passed
	// on too few requests; a comparison with enough requests that finds
	// the build worse than its baseline still fails it.
	// +optional
	AllowNoTraffic bool `json:"allowNoTraffic,omitempty"`
}

// ExternalTest lets an outside test runner gate the release of a build. The
// runner reaches the build through its tag route and reports here.
type ExternalTest struct {
	// enabled makes the release wait for the external test.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// started is set by the test runner when the test begins.
	// +optional
	Started bool `json:"started,omitempty"`
	// completed is set by the test runner when the test ends.
	// +optional
	Completed bool `json:"completed,omitempty"`
	// succeeded is set by the test runner with completed; false fails the revision.
	// +optional
	Succeeded bool `json:"succeeded,omitempty"`
	// timeout is how long the test may run after lastUpdated before the
	// revision times out, as a duration such as 2h.
	// +optional
	// +kubebuilder:default="2h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && self.findAll('[0-9.]+[^0-9.]+').map(c, double(c.find('^[0-9.]+')) * {'h': 3600e9, 'm': 60e9, 's': 1e9, 'ms': 1e6, 'us': 1e3, 'µs': 1e3, 'μs': 1e3, 'ns': 1.0}[c.find('[^0-9.]+$')]).sum() < 9.2233720369e18 && duration(self) >= duration('0s')",message="must be a non-negative duration such as 90s, 30m or 2h, no longer than 2562047h47m16.854775807s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// lastUpdated is when the test runner last wrote this, in RFC 3339 such
	// as 2026-11-21T10:00:00Z.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// DatadogMonitoring judges the build with Datadog monitors instead of, or
// as well as, Prometheus alerts.
type DatadogMonitoring struct {
	// enabled judges canaries and releases of this target by the Datadog
	// monitors tagged app:<app> and slo:true (canary:true with
	// canaryWithSLIRules) whose group tag:<tag> alerts, instead of by
	// Prometheus alerts. Picchu needs Datadog credentials (--datadog-secret).
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// withPrometheus keeps the Prometheus alert checks as well when enabled
	// is true: a firing alert in either fails the build.
	// +optional
	WithPrometheus bool `json:"withPrometheus,omitempty"`
}

// AWSInfo holds AWS settings for a build's pods.
type AWSInfo struct {
	// iam holds the IAM role of the pods.
	// +optional
	IAM IAMInfo `json:"iam,omitempty"`
}

// IAMInfo names the IAM role of a build's pods.
type IAMInfo struct {
	// role_arn is the IAM role the app's service account assumes (IRSA).
	// +optional
	RoleARN string `json:"role_arn,omitempty"`
}

// WaypointHPA sizes the waypoint proxy's autoscaler in ambient mode.
type WaypointHPA struct {
	// minReplicas of the waypoint (at least 2 are run).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// maxReplicas of the waypoint (20 when unset).
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// targetCPUUtilizationPercentage of the waypoint (70 when unset).
	// +optional
	// +kubebuilder:validation:Minimum=1
	TargetCPUUtilizationPercentage *int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// ServiceMonitor is a prometheus-operator ServiceMonitor created for the app.
type ServiceMonitor struct {
	// name of the ServiceMonitor.
	// +required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// sloRegex fills the regex of relabelings that have none with the metric
	// names used by the SLO queries, so Prometheus keeps just those.
	// +optional
	SLORegex bool `json:"sloRegex,omitempty"`
	// labels of the ServiceMonitor.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the ServiceMonitor.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// spec of the ServiceMonitor. Its namespace selector is set to the app's namespace.
	// +optional
	Spec monitoringv1.ServiceMonitorSpec `json:"spec,omitempty"`
}
