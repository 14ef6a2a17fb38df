package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster is a target cluster Picchu deploys to. Its fleet is the label
// picchu.medium.engineering/fleet; its credentials are in a Secret of the same
// name and namespace whose key "auth-info" holds a kubeconfig user (AuthInfo)
// as JSON with the credentials inline: "token", or "client-certificate-data"
// and "client-key-data" ("exec" only when the operator allows it). Fields
// naming files or other identities of the operator's are refused.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Fleet",type=string,JSONPath=`.metadata.labels.picchu\.medium\.engineering/fleet`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Breaker",type=string,JSONPath=`.status.health.breaker`
// +kubebuilder:printcolumn:name="Frozen",type=string,JSONPath=`.status.frozen`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetes.version`,priority=1
// +kubebuilder:printcolumn:name="Plain-HTTP",type=boolean,JSONPath=`.status.plainHTTP`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says how to reach the cluster and how to route on it. A Cluster
	// without one is disabled (the original accepted it too).
	// +optional
	Spec ClusterSpec `json:"spec"`
	// status reports whether the cluster is reachable.
	// +optional
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec says how to reach a target cluster and how to route on it.
//
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.config)",message="an enabled cluster needs config (server and certificate-authority-data)",fieldPath=".config"
type ClusterSpec struct {
	// enabled makes Picchu deploy to the cluster.
	// +optional
	Enabled bool `json:"enabled"`
	// hotStandby clusters receive every object but are not counted when
	// replicas are divided or readiness is judged.
	// +optional
	HotStandby bool `json:"hotStandby,omitempty"`
	// config is the API server's address and CA.
	// +optional
	Config *ClusterConfig `json:"config,omitempty"`
	// scalingFactorString multiplies the replicas and autoscaler bounds on this
	// cluster, such as "1.0" or "0.5".
	// +optional
	// +kubebuilder:default="1.0"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$')",message="must be a non-negative decimal number such as 1.0 or 0.5"
	ScalingFactorString *string `json:"scalingFactorString,omitempty"`
	// ingresses are the cluster's ingress gateways and their default domains.
	// +optional
	Ingresses ClusterIngresses `json:"ingresses,omitempty"`
	// enableDevRoutes adds to each app's VirtualService on this cluster a
	// route "00_dev-<app>", ahead of its other routes, that sends a request
	// carrying the dev-route header (devRouteTagTemplate), whatever its
	// value, to the developer service the operator's
	// --dev-routes-service-host and --dev-routes-service-port name. Without
	// both flags it adds nothing.
	// +optional
	EnableDevRoutes bool `json:"enableDevRoutes,omitempty"`
	// devRouteTagTemplate is a Go template rendering the name of the
	// header that selects the dev route, given .App, .Target, .Fleet and
	// .Namespace, such as "x-dev-{{.App}}" (the default when empty). It must
	// render an HTTP header name; it is lower-cased.
	// +optional
	DevRouteTagTemplate string `json:"devRouteTagTemplate,omitempty"`
	// disableEventDriven runs no pod of event-driven Revisions
	// (spec.eventDriven) on this cluster: their ReplicaSets stay at 0
	// replicas with no autoscaler, and the cluster is left out of their
	// replica division and readiness. Other Revisions are not affected.
	// +optional
	DisableEventDriven bool `json:"disableEventDriven,omitempty"`
	// freezes are the cluster's maintenance windows. While one is open, no
	// build starts its canary or its ramp on the cluster, and builds
	// already ramping hold at their weight in the cluster's wave (without
	// release waves, the whole target's); a rollback still proceeds. A
	// window that cannot be read (an unknown time zone) freezes, and says
	// why in status.frozen. Freeze a whole fleet by patching each of its
	// Clusters (kubectl patch clusters -l picchu.medium.engineering/fleet=…).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Freezes []FreezeWindow `json:"freezes,omitempty"`
	// preflight are the cluster's own checks, made before a new build takes
	// traffic on it (its canary, or its first ramp step in the cluster's
	// wave): while one fails, the build holds there, never fails, and the
	// check is made again on a backoff. Whatever is set here, Picchu also
	// checks that the cluster answers and, unless the operator runs with
	// --preflight-capacity=false, that its nodes have room for the build's
	// pods. A rollback never waits on a check.
	// +optional
	Preflight *ClusterPreflight `json:"preflight,omitempty"`
	// prometheus says how the metrics Picchu reads name this cluster.
	// +optional
	Prometheus *ClusterPrometheus `json:"prometheus,omitempty"`
}

// ClusterPreflight are alerts that say a cluster is in no state to take a
// new build: while one fires, new builds hold there. They are read from the
// Prometheus of --prometheus-query-address; a cluster that declares them
// while Picchu has no Prometheus to ask holds every new build, and says so.
//
// +kubebuilder:validation:XValidation:rule="has(self.alerts) || !has(self.alertLabels)",message="alertLabels narrow alerts: name some alerts",fieldPath=".alertLabels"
type ClusterPreflight struct {
	// alerts are the names of cluster-level alerts (such as
	// KubeNodeNotReady or EtcdHighFsyncDurations) that hold new builds
	// while one of them fires: ALERTS{alertstate="firing"} with one of
	// these alertnames, and alertLabels.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z_:][a-zA-Z0-9_:]*$`
	Alerts []string `json:"alerts,omitempty"`
	// alertLabels are labels the alerts must carry to count, such as
	// cluster: west, when one Prometheus sees every cluster.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-zA-Z_][a-zA-Z0-9_]*$'))",message="label names are letters, digits and underscores, and do not start with a digit"
	AlertLabels map[string]string `json:"alertLabels,omitempty"`
	// query is a PromQL expression that holds new builds while it returns
	// any series, such as
	// sum(kube_node_status_condition{condition="Ready",status="true",cluster="west"}) < 3.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query,omitempty"`
}

// FreezeWindow is a maintenance window of a Cluster: one-off (start and
// end) or weekly (weekly).
//
// +kubebuilder:validation:XValidation:rule="has(self.start) == has(self.end)",message="a one-off window needs both start and end"
// +kubebuilder:validation:XValidation:rule="has(self.start) != has(self.weekly)",message="a window is either one-off (start and end) or weekly, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.end) || timestamp(self.start) < timestamp(self.end)",message="end must be after start",fieldPath=".end"
type FreezeWindow struct {
	// name of the window, shown while it is open.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// start of a one-off window.
	// +optional
	Start *metav1.Time `json:"start,omitempty"`
	// end of a one-off window.
	// +optional
	End *metav1.Time `json:"end,omitempty"`
	// weekly is a window that opens every week on its days.
	// +optional
	Weekly *WeeklyWindow `json:"weekly,omitempty"`
}

// WeeklyWindow opens on some days of the week at a local time and closes at
// another, in a time zone: daylight saving time moves it with the clocks.
type WeeklyWindow struct {
	// days the window opens on (Mon, Tue, Wed, Thu, Fri, Sat, Sun); every
	// day when empty.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	// +kubebuilder:validation:items:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
	Days []string `json:"days,omitempty"`
	// from is the local time the window opens, "HH:MM".
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	From string `json:"from"`
	// to is the local time it closes, "HH:MM": the next day when it is not
	// after from (22:00 to 06:00 spans the night).
	// +required
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	To string `json:"to"`
	// timeZone is the IANA time zone of from and to, such as
	// "Europe/Paris"; UTC when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
}

// ClusterConfig is the address and CA of a cluster's API server.
//
// +kubebuilder:validation:XValidation:rule="self.server.startsWith('https://') || (has(self.allowPlainHTTP) && self.allowPlainHTTP)",message="must be an https:// URL; an http:// server needs allowPlainHTTP: true, and then gets no credentials",fieldPath=".server"
type ClusterConfig struct {
	// server is the API server's URL, such as https://10.0.0.1:6443. It must
	// be https:// unless allowPlainHTTP is true.
	// +required
	// +kubebuilder:validation:Pattern=`^https?://`
	Server string `json:"server"`
	// certificate-authority-data is the PEM CA bundle that signs the API
	// server's certificate (base64 in YAML). Without it, the operator's
	// system roots are trusted.
	// +optional
	CertificateAuthorityData []byte `json:"certificate-authority-data,omitempty"`
	// allowPlainHTTP lets server be an http:// URL, such as a local
	// "kubectl proxy": Picchu then talks to it without TLS, anyone on the
	// path can read and change what it sends and receives, and it sends no
	// credentials (the Secret's auth-info must hold none). The Cluster's
	// status.plainHTTP shows it. Leave it unset for real clusters.
	// +optional
	AllowPlainHTTP bool `json:"allowPlainHTTP,omitempty"`
}

// ClusterIngresses are a cluster's ingress gateways.
type ClusterIngresses struct {
	// public ingress gateway.
	// +optional
	Public IngressInfo `json:"public,omitempty"`
	// private ingress gateway.
	// +optional
	Private IngressInfo `json:"private,omitempty"`
}

// IngressInfo is an ingress gateway and its default domains.
type IngressInfo struct {
	// gateway is the Istio Gateway, as "<namespace>/<name>".
	// +optional
	Gateway string `json:"gateway,omitempty"`
	// defaultDomains: an app's default ports get the hosts "<namespace>.<domain>".
	// A port's own hosts may be a defaultDomain or a name under one
	// ("shop.example.com" under "example.com"), but no wildcard: every
	// delivery namespace's apps share these domains.
	// +optional
	DefaultDomains []string `json:"defaultDomains,omitempty"`
	// allowedDomains are further domains the ports' hosts of the Revisions
	// of this Cluster's namespace may use on this ingress: a host is one of
	// them or under one, and may be a wildcard under one
	// ("*.team-a.example.com" under "team-a.example.com"). A host under
	// neither list is refused at admission (naming the field) and by the
	// controller, which routes nothing of the app on the cluster until it
	// is gone.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	// dnsName is kept for compatibility; Picchu ignores it.
	// +optional
	DNSName string `json:"dnsName,omitempty"`
}

// ClusterStatus reports whether a cluster is reachable.
type ClusterStatus struct {
	// observedGeneration is the generation of the spec Picchu last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions are the kstatus conditions Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// kubernetes reports the API server's version and reachability.
	// +optional
	Kubernetes ClusterKubernetesStatus `json:"kubernetes,omitempty"`
	// plainHTTP says Picchu reaches the API server over plain HTTP, without
	// TLS and without credentials (spec.config.allowPlainHTTP with an
	// http:// server).
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
	// frozen names the freeze window open now and until when, such as
	// "upgrade until 2026-11-25T06:00:00Z"; empty when none is.
	// +optional
	Frozen string `json:"frozen,omitempty"`
	// health is the circuit breaker Picchu keeps on the cluster's API
	// server: while it is open, nothing waits on the cluster; steps up of
	// its fleet's releases hold, rollbacks go on in the other clusters.
	// +optional
	Health *ClusterHealthStatus `json:"health,omitempty"`
}

// ClusterHealthStatus is the state of a cluster's circuit breaker.
type ClusterHealthStatus struct {
	// breaker is Closed while the API server answers, Open after a run of
	// failures or timeouts (requests fail at once), HalfOpen while one
	// probe request is under way.
	// +kubebuilder:validation:Enum=Closed;HalfOpen;Open
	Breaker string `json:"breaker"`
	// since is when the breaker entered its state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// lastError is the last failure seen since the API server last answered.
	// +optional
	LastError string `json:"lastError,omitempty"`
	// retryAt is when an open breaker lets its next probe through.
	// +optional
	RetryAt *metav1.Time `json:"retryAt,omitempty"`
	// latency is how long the API server took to answer a health check,
	// written when it doubled or halved, by 100 ms at least (the exact
	// figure is the picchu_cluster_health_check_seconds metric).
	// +optional
	Latency *metav1.Duration `json:"latency,omitempty"`
}

// ClusterKubernetesStatus reports an API server's version and reachability.
type ClusterKubernetesStatus struct {
	// version of the API server.
	// +optional
	Version string `json:"version,omitempty"`
	// ready says the API server answered the last health check.
	// +optional
	Ready bool `json:"ready"`
}

// +kubebuilder:object:root=true

// ClusterList is a list of Clusters.
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Cluster{}, &ClusterList{})
}

// ClusterPrometheus says how the metrics provider names a cluster.
type ClusterPrometheus struct {
	// clusterLabelValue is the value of the cluster label
	// (--prometheus-cluster-label, "cluster" by default) on the alerts and
	// SLO series that come from this cluster, such as an external label
	// its Prometheus sets: alerts that carry it are told as this cluster's,
	// and a wave's evidence and baseline comparison count its series. The
	// Cluster's name when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ClusterLabelValue string `json:"clusterLabelValue,omitempty"`
}

// PrometheusClusterLabelValue is the value of the cluster label on the
// series that come from the cluster: spec.prometheus.clusterLabelValue, or
// its name.
func (c *Cluster) PrometheusClusterLabelValue() string {
	if c.Spec.Prometheus != nil && c.Spec.Prometheus.ClusterLabelValue != "" {
		return c.Spec.Prometheus.ClusterLabelValue
	}
	return c.Name
}
