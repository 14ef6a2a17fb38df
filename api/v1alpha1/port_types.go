package v1alpha1

import corev1 "k8s.io/api/core/v1"

// PortMode says where a port is exposed.
// +kubebuilder:validation:Enum=public;private;local
type PortMode string

const (
	// PortModePublic exposes the port on the public and the private ingress gateways.
	PortModePublic PortMode = "public"
	// PortModePrivate exposes the port on the private ingress gateway.
	PortModePrivate PortMode = "private"
	// PortModeLocal keeps the port inside the mesh.
	PortModeLocal PortMode = "local"
)

// Ingress names an ingress gateway of a Cluster: public or private. A
// port's ingresses may name others, as the original allowed: they are
// ignored, with an admission warning.
type Ingress string

const (
	// IngressPublic is the Cluster's public ingress gateway.
	IngressPublic Ingress = "public"
	// IngressPrivate is the Cluster's private ingress gateway.
	IngressPrivate Ingress = "private"
)

// Ingresses are a Cluster's ingresses, private first: the order routes
// match them in and checks report them in.
func Ingresses() []Ingress { return []Ingress{IngressPrivate, IngressPublic} }

// PortInfo is a port of the app and how it is routed.
type PortInfo struct {
	// name of the port, unique within the target. It names the container
	// port and the Service port, so it must be an IANA service name: at most
	// 15 lowercase letters, digits and '-', at least one letter, and no '-'
	// at either end or next to another. A port named "status" serves the
	// default probes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^([0-9]+-)*[0-9]*[a-z]([a-z0-9]|-[a-z0-9])*$`
	Name string `json:"name"`
	// hosts are extra host names routed to this port on the ingress gateways
	// (never in the mesh, where only the app's Service host is routed). On
	// each Cluster whose ingress the port is exposed on, a host must be one
	// of the ingress's defaultDomains or under one, or one of its
	// allowedDomains or under one; a wildcard ("*.shop.example.com") only
	// under allowedDomains.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Hosts []string `json:"hosts,omitempty"`
	// ingressPort is the port the ingress gateways listen on for this port.
	// +optional
	// +kubebuilder:default=443
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	IngressPort int32 `json:"ingressPort,omitempty"`
	// port is the Service port.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`
	// containerPort is the port the app container listens on.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort,omitempty"`
	// protocol of the port.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
	// mode says where the port is exposed: public (public and private
	// ingresses), private (private ingress) or local (mesh only).
	// +optional
	// +kubebuilder:default=private
	Mode PortMode `json:"mode,omitempty"`
	// default marks the port that serves an ingress's default hosts when the
	// ingress has several ports.
	// +optional
	Default bool `json:"default,omitempty"`
	// ingresses the port is exposed on: public or private (other names
	// are ignored, with a warning). The webhook fills it from mode: private
	// gives [private], public gives [private, public].
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	Ingresses []Ingress `json:"ingresses,omitempty"`
	// istio holds the mesh's HTTP settings for this port.
	// +optional
	Istio PortIstioConfig `json:"istio,omitempty"`
}

// PortIstioConfig holds the mesh settings of a port.
type PortIstioConfig struct {
	// http settings of the port's routes.
	// +optional
	HTTP PortIstioHTTPConfig `json:"http,omitempty"`
}

// PortIstioHTTPConfig holds the retries and timeout of a port's HTTP routes.
type PortIstioHTTPConfig struct {
	// retries of the port's routes.
	// +optional
	Retries *HTTPRetry `json:"retries,omitempty"`
	// timeout of a request on the port's routes, as a duration such as 15s.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && (duration(self) == duration('0s') || duration(self) >= duration('1ms'))",message="must be a non-negative duration such as 500ms or 15s: 0, or from 1ms (Istio's minimum) to 2562047h47m16.854775807s"
	Timeout string `json:"timeout,omitempty"`
}

// HTTPRetry is the retry policy of a port's routes.
type HTTPRetry struct {
	// attempts is the number of retries of a request.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Attempts int32 `json:"attempts,omitempty"`
	// perTryTimeout is the timeout of each attempt, as a duration such as 2s.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$') && (duration(self) == duration('0s') || duration(self) >= duration('1ms'))",message="must be a non-negative duration such as 500ms or 2s: 0, or from 1ms (Istio's minimum) to 2562047h47m16.854775807s"
	PerTryTimeout string `json:"perTryTimeout,omitempty"`
	// retryOn lists the conditions to retry on, as Envoy's x-envoy-retry-on
	// (for example "5xx,connect-failure").
	// +optional
	RetryOn string `json:"retryOn,omitempty"`
}
