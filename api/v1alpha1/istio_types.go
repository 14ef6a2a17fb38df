package v1alpha1

// The types in this file mirror the shape of Istio's networking v1alpha3 API
// that the original operator accepted, field for field: durations are
// {seconds, nanos} objects, wrapped values are {value} objects and enums are
// numbers. Picchu converts them to Istio's own form when it writes a
// DestinationRule.

// IstioConfig holds a build's mesh settings.
type IstioConfig struct {
	// trafficPolicy of the build's DestinationRule subset.
	// +optional
	TrafficPolicy *TrafficPolicy `json:"trafficPolicy,omitempty"`
	// sidecar limits what the app's sidecars may reach.
	// +optional
	Sidecar *SidecarConfig `json:"sidecar,omitempty"`
}

// SidecarConfig configures the Istio Sidecar of the app's namespace.
type SidecarConfig struct {
	// egressHosts the sidecars may reach, in Istio's "<namespace>/<host>" form.
	// +optional
	EgressHosts []string `json:"egressHosts,omitempty"`
}

// TrafficPolicy is Istio's traffic policy for a destination subset.
type TrafficPolicy struct {
	// loadBalancer settings.
	// +optional
	LoadBalancer *LoadBalancerSettings `json:"loadBalancer,omitempty"`
	// connectionPool settings.
	// +optional
	ConnectionPool *ConnectionPoolSettings `json:"connectionPool,omitempty"`
	// outlierDetection settings: when to eject unhealthy hosts.
	// +optional
	OutlierDetection *OutlierDetection `json:"outlierDetection,omitempty"`
	// tls settings for connections to the destination.
	// +optional
	TLS *ClientTLSSettings `json:"tls,omitempty"`
	// portLevelSettings override the policy per port.
	// +optional
	PortLevelSettings []PortTrafficPolicy `json:"portLevelSettings,omitempty"`
}

// PortTrafficPolicy is a traffic policy for one port.
type PortTrafficPolicy struct {
	// port the policy applies to.
	// +optional
	Port *PortSelector `json:"port,omitempty"`
	// loadBalancer settings.
	// +optional
	LoadBalancer *LoadBalancerSettings `json:"loadBalancer,omitempty"`
	// connectionPool settings.
	// +optional
	ConnectionPool *ConnectionPoolSettings `json:"connectionPool,omitempty"`
	// outlierDetection settings.
	// +optional
	OutlierDetection *OutlierDetection `json:"outlierDetection,omitempty"`
	// tls settings.
	// +optional
	TLS *ClientTLSSettings `json:"tls,omitempty"`
}

// PortSelector selects a port by number.
type PortSelector struct {
	// number of the port.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	Number uint32 `json:"number,omitempty"`
}

// Duration is a protobuf duration: seconds plus nanoseconds.
type Duration struct {
	// seconds of the duration.
	// +optional
	Seconds int64 `json:"seconds,omitempty"`
	// nanos are the fraction of a second, in nanoseconds.
	// +optional
	Nanos int32 `json:"nanos,omitempty"`
}

// UInt32Value is a protobuf wrapped unsigned integer.
type UInt32Value struct {
	// value of the integer.
	// +optional
	Value uint32 `json:"value,omitempty"`
}

// BoolValue is a protobuf wrapped boolean.
type BoolValue struct {
	// value of the boolean.
	// +optional
	Value bool `json:"value,omitempty"`
}

// LoadBalancerSettings are Istio's load-balancing settings.
type LoadBalancerSettings struct {
	// localityLbSetting configures locality-aware load balancing.
	// +optional
	LocalityLbSetting *LocalityLoadBalancerSetting `json:"localityLbSetting,omitempty"`
	// warmupDurationSecs ramps new endpoints' share of traffic up over this long.
	// +optional
	WarmupDurationSecs *Duration `json:"warmupDurationSecs,omitempty"`
}

// LocalityLoadBalancerSetting is Istio's locality-aware load balancing.
type LocalityLoadBalancerSetting struct {
	// distribute sets how traffic from a locality is spread over others.
	// +optional
	Distribute []LocalityDistribute `json:"distribute,omitempty"`
	// failover sets where traffic goes when a region is unhealthy.
	// +optional
	Failover []LocalityFailover `json:"failover,omitempty"`
	// failoverPriority orders endpoints by labels for failover.
	// +optional
	FailoverPriority []string `json:"failoverPriority,omitempty"`
	// enabled turns locality load balancing on or off.
	// +optional
	Enabled *BoolValue `json:"enabled,omitempty"`
}

// LocalityDistribute spreads traffic from one locality over others.
type LocalityDistribute struct {
	// from is the originating locality ("region/zone/subzone", wildcards allowed).
	// +optional
	From string `json:"from,omitempty"`
	// to maps localities to their percent of traffic.
	// +optional
	To map[string]uint32 `json:"to,omitempty"`
}

// LocalityFailover names where traffic goes when a region is unhealthy.
type LocalityFailover struct {
	// from is the originating region.
	// +optional
	From string `json:"from,omitempty"`
	// to is the region to fail over to.
	// +optional
	To string `json:"to,omitempty"`
}

// ConnectionPoolSettings are Istio's connection-pool limits.
type ConnectionPoolSettings struct {
	// tcp limits.
	// +optional
	TCP *TCPSettings `json:"tcp,omitempty"`
	// http limits.
	// +optional
	HTTP *HTTPSettings `json:"http,omitempty"`
}

// TCPSettings are TCP connection-pool limits.
type TCPSettings struct {
	// maxConnections to a destination host.
	// +optional
	MaxConnections int32 `json:"maxConnections,omitempty"`
	// connectTimeout of a TCP connection.
	// +optional
	ConnectTimeout *Duration `json:"connectTimeout,omitempty"`
	// tcpKeepalive settings.
	// +optional
	TCPKeepalive *TCPKeepalive `json:"tcpKeepalive,omitempty"`
}

// TCPKeepalive sets TCP keep-alive probes.
type TCPKeepalive struct {
	// probes is the number of unanswered probes before the connection is dropped.
	// +optional
	Probes uint32 `json:"probes,omitempty"`
	// time a connection is idle before probes start.
	// +optional
	Time *Duration `json:"time,omitempty"`
	// interval between probes.
	// +optional
	Interval *Duration `json:"interval,omitempty"`
}

// HTTPSettings are HTTP connection-pool limits.
type HTTPSettings struct {
	// http1MaxPendingRequests is the most requests queued for a connection.
	// +optional
	HTTP1MaxPendingRequests int32 `json:"http1MaxPendingRequests,omitempty"`
	// http2MaxRequests is the most active requests to a destination.
	// +optional
	HTTP2MaxRequests int32 `json:"http2MaxRequests,omitempty"`
	// maxRequestsPerConnection closes a connection after this many requests.
	// +optional
	MaxRequestsPerConnection int32 `json:"maxRequestsPerConnection,omitempty"`
	// maxRetries is the most outstanding retries to a destination.
	// +optional
	MaxRetries int32 `json:"maxRetries,omitempty"`
	// idleTimeout closes an idle connection.
	// +optional
	IdleTimeout *Duration `json:"idleTimeout,omitempty"`
	// h2_upgrade_policy is Istio's H2UpgradePolicy as a number: 0 default, 1 do not upgrade, 2 upgrade.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2
	H2UpgradePolicy int32 `json:"h2_upgrade_policy,omitempty"`
	// useClientProtocol uses the client's HTTP protocol towards the destination.
	// +optional
	UseClientProtocol bool `json:"useClientProtocol,omitempty"`
}

// OutlierDetection ejects unhealthy hosts from the load-balancing pool.
type OutlierDetection struct {
	// consecutiveErrors is deprecated by Istio; use consecutive5xxErrors.
	// +optional
	ConsecutiveErrors int32 `json:"consecutiveErrors,omitempty"`
	// splitExternalLocalOriginErrors counts local-origin failures apart from 5xx responses.
	// +optional
	SplitExternalLocalOriginErrors bool `json:"splitExternalLocalOriginErrors,omitempty"`
	// consecutiveLocalOriginFailures before a host is ejected.
	// +optional
	ConsecutiveLocalOriginFailures *UInt32Value `json:"consecutiveLocalOriginFailures,omitempty"`
	// consecutiveGatewayErrors (502, 503, 504) before a host is ejected.
	// +optional
	ConsecutiveGatewayErrors *UInt32Value `json:"consecutiveGatewayErrors,omitempty"`
	// consecutive5xxErrors before a host is ejected.
	// +optional
	Consecutive5xxErrors *UInt32Value `json:"consecutive5xxErrors,omitempty"`
	// interval between ejection sweeps.
	// +optional
	Interval *Duration `json:"interval,omitempty"`
	// baseEjectionTime is the shortest ejection.
	// +optional
	BaseEjectionTime *Duration `json:"baseEjectionTime,omitempty"`
	// maxEjectionPercent of hosts that may be ejected.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MaxEjectionPercent int32 `json:"maxEjectionPercent,omitempty"`
	// minHealthPercent of healthy hosts below which outlier detection stops.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	MinHealthPercent int32 `json:"minHealthPercent,omitempty"`
}

// ClientTLSSettings are Istio's TLS settings towards a destination.
type ClientTLSSettings struct {
	// mode is Istio's TLS mode as a number: 0 DISABLE, 1 SIMPLE, 2 MUTUAL, 3 ISTIO_MUTUAL.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3
	Mode int32 `json:"mode,omitempty"`
	// clientCertificate is the path of the client certificate (MUTUAL).
	// +optional
	ClientCertificate string `json:"clientCertificate,omitempty"`
	// privateKey is the path of the client's private key (MUTUAL).
	// +optional
	PrivateKey string `json:"privateKey,omitempty"`
	// caCertificates is the path of the CA certificates that verify the server.
	// +optional
	CACertificates string `json:"caCertificates,omitempty"`
	// credentialName names a Secret holding the client's certificates (gateways only).
	// +optional
	CredentialName string `json:"credentialName,omitempty"`
	// subjectAltNames the server certificate must carry.
	// +optional
	SubjectAltNames []string `json:"subjectAltNames,omitempty"`
	// sni presented to the server.
	// +optional
	SNI string `json:"sni,omitempty"`
	// insecureSkipVerify skips verifying the server certificate.
	// +optional
	InsecureSkipVerify *BoolValue `json:"insecureSkipVerify,omitempty"`
}

// HTTPFaultInjection is an Istio HTTP fault: a delay, an abort, or both.
// Manifests written for the original operator could not set fixedDelay,
// httpStatus or grpcStatus; a fault without them injects nothing.
type HTTPFaultInjection struct {
	// delay requests before forwarding them.
	// +optional
	Delay *FaultDelay `json:"delay,omitempty"`
	// abort requests with an error.
	// +optional
	Abort *FaultAbort `json:"abort,omitempty"`
}

// FaultDelay delays a share of requests.
type FaultDelay struct {
	// fixedDelay before forwarding a request, as a duration such as 5s.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+$') && (duration(self) == duration('0s') || duration(self) >= duration('1ms'))",message="must be a duration such as 500ms or 5s: 0s, or from 1ms (Istio's minimum) to 2562047h47m16.854775807s"
	FixedDelay string `json:"fixedDelay,omitempty"`
	// percent of requests delayed (deprecated by Istio; use percentage).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent,omitempty"`
	// percentage of requests delayed.
	// +optional
	Percentage *Percent `json:"percentage,omitempty"`
}

// FaultAbort aborts a share of requests with an error.
type FaultAbort struct {
	// httpStatus returned to the caller.
	// +optional
	// +kubebuilder:validation:Minimum=200
	// +kubebuilder:validation:Maximum=599
	HTTPStatus int32 `json:"httpStatus,omitempty"`
	// grpcStatus returned to the caller, such as "UNAVAILABLE".
	// +optional
	GRPCStatus string `json:"grpcStatus,omitempty"`
	// percentage of requests aborted.
	// +optional
	Percentage *Percent `json:"percentage,omitempty"`
}

// Percent is a percentage from 0 to 100.
type Percent struct {
	// value of the percentage.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Value float64 `json:"value,omitempty"`
}
