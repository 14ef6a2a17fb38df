package manifests

import (
	"fmt"
	"maps"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	istioapi "istio.io/api/networking/v1alpha3"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// This file converts our mirror of Istio's v1alpha3 JSON (istio_types.go) to
// Istio's own protobuf types, field by field. Errors name the field's JSON
// path below the object converted.

// convertTrafficPolicy converts a build's istio.trafficPolicy.
func convertTrafficPolicy(in *picchuv1alpha1.TrafficPolicy) (*istioapi.TrafficPolicy, error) {
	if in == nil {
		return nil, nil
	}
	common, err := convertPolicySettings(in.LoadBalancer, in.ConnectionPool, in.OutlierDetection, in.TLS)
	if err != nil {
		return nil, err
	}
	out := &istioapi.TrafficPolicy{
		LoadBalancer: common.loadBalancer, ConnectionPool: common.connectionPool,
		OutlierDetection: common.outlierDetection, Tls: common.tls,
	}
	for i := range in.PortLevelSettings {
		p, err := convertPortTrafficPolicy(&in.PortLevelSettings[i])
		if err != nil {
			return nil, fmt.Errorf("portLevelSettings[%d].%w", i, err)
		}
		out.PortLevelSettings = append(out.PortLevelSettings, p)
	}
	return out, nil
}

func convertPortTrafficPolicy(in *picchuv1alpha1.PortTrafficPolicy) (*istioapi.TrafficPolicy_PortTrafficPolicy, error) {
	common, err := convertPolicySettings(in.LoadBalancer, in.ConnectionPool, in.OutlierDetection, in.TLS)
	if err != nil {
		return nil, err
	}
	out := &istioapi.TrafficPolicy_PortTrafficPolicy{
		LoadBalancer: common.loadBalancer, ConnectionPool: common.connectionPool,
		OutlierDetection: common.outlierDetection, Tls: common.tls,
	}
	if in.Port != nil {
		out.Port = &istioapi.PortSelector{Number: in.Port.Number}
	}
	return out, nil
}

// policySettings are the settings a traffic policy and a port's policy share.
type policySettings struct {
	loadBalancer     *istioapi.LoadBalancerSettings
	connectionPool   *istioapi.ConnectionPoolSettings
	outlierDetection *istioapi.OutlierDetection
	tls              *istioapi.ClientTLSSettings
}

func convertPolicySettings(lb *picchuv1alpha1.LoadBalancerSettings, cp *picchuv1alpha1.ConnectionPoolSettings,
	od *picchuv1alpha1.OutlierDetection, tls *picchuv1alpha1.ClientTLSSettings) (policySettings, error) {
	var out policySettings
	var err error
	if out.loadBalancer, err = convertLoadBalancer(lb); err != nil {
		return out, fmt.Errorf("loadBalancer.%w", err)
	}
	if out.connectionPool, err = convertConnectionPool(cp); err != nil {
		return out, fmt.Errorf("connectionPool.%w", err)
	}
	if out.outlierDetection, err = convertOutlierDetection(od); err != nil {
		return out, fmt.Errorf("outlierDetection.%w", err)
	}
	if out.tls, err = convertTLS(tls); err != nil {
		return out, fmt.Errorf("tls.%w", err)
	}
	return out, nil
}

func convertLoadBalancer(in *picchuv1alpha1.LoadBalancerSettings) (*istioapi.LoadBalancerSettings, error) {
	if in == nil {
		return nil, nil
	}
	out := &istioapi.LoadBalancerSettings{}
	var err error
	if out.WarmupDurationSecs, err = convertDuration("warmupDurationSecs", in.WarmupDurationSecs); err != nil {
		return nil, err
	}
	if l := in.LocalityLbSetting; l != nil {
		out.LocalityLbSetting = &istioapi.LocalityLoadBalancerSetting{
			FailoverPriority: cloneStrings(l.FailoverPriority),
			Enabled:          convertBool(l.Enabled),
		}
		for _, d := range l.Distribute {
			out.LocalityLbSetting.Distribute = append(out.LocalityLbSetting.Distribute,
				&istioapi.LocalityLoadBalancerSetting_Distribute{From: d.From, To: maps.Clone(d.To)})
		}
		for _, f := range l.Failover {
			out.LocalityLbSetting.Failover = append(out.LocalityLbSetting.Failover,
				&istioapi.LocalityLoadBalancerSetting_Failover{From: f.From, To: f.To})
		}
	}
	return out, nil
}

func convertConnectionPool(in *picchuv1alpha1.ConnectionPoolSettings) (*istioapi.ConnectionPoolSettings, error) {
	if in == nil {
		return nil, nil
	}
	out := &istioapi.ConnectionPoolSettings{}
	var err error
	if out.Tcp, err = convertTCP(in.TCP); err != nil {
		return nil, fmt.Errorf("tcp.%w", err)
	}
	if out.Http, err = convertHTTPSettings(in.HTTP); err != nil {
		return nil, fmt.Errorf("http.%w", err)
	}
	return out, nil
}

func convertTCP(in *picchuv1alpha1.TCPSettings) (*istioapi.ConnectionPoolSettings_TCPSettings, error) {
	if in == nil {
		return nil, nil
	}
	out := &istioapi.ConnectionPoolSettings_TCPSettings{MaxConnections: in.MaxConnections}
	var err error
	if out.ConnectTimeout, err = convertDuration("connectTimeout", in.ConnectTimeout); err != nil {
		return nil, err
	}
	if k := in.TCPKeepalive; k != nil {
		out.TcpKeepalive = &istioapi.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Probes: k.Probes}
		if out.TcpKeepalive.Time, err = convertDuration("tcpKeepalive.time", k.Time); err != nil {
			return nil, err
		}
		if out.TcpKeepalive.Interval, err = convertDuration("tcpKeepalive.interval", k.Interval); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func convertHTTPSettings(in *picchuv1alpha1.HTTPSettings) (*istioapi.ConnectionPoolSettings_HTTPSettings, error) {
	if in == nil {
		return nil, nil
	}
	if _, ok := istioapi.ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy_name[in.H2UpgradePolicy]; !ok {
		return nil, fmt.Errorf("h2_upgrade_policy: unknown value %d", in.H2UpgradePolicy)
	}
	out := &istioapi.ConnectionPoolSettings_HTTPSettings{
		Http1MaxPendingRequests:  in.HTTP1MaxPendingRequests,
		Http2MaxRequests:         in.HTTP2MaxRequests,
		MaxRequestsPerConnection: in.MaxRequestsPerConnection,
		MaxRetries:               in.MaxRetries,
		H2UpgradePolicy:          istioapi.ConnectionPoolSettings_HTTPSettings_H2UpgradePolicy(in.H2UpgradePolicy),
		UseClientProtocol:        in.UseClientProtocol,
	}
	var err error
	if out.IdleTimeout, err = convertDuration("idleTimeout", in.IdleTimeout); err != nil {
		return nil, err
	}
	return out, nil
}

func convertOutlierDetection(in *picchuv1alpha1.OutlierDetection) (*istioapi.OutlierDetection, error) {
	if in == nil {
		return nil, nil
	}
	out := &istioapi.OutlierDetection{
		ConsecutiveErrors:              in.ConsecutiveErrors, //nolint:staticcheck // carried over as given; Istio still reads it
		SplitExternalLocalOriginErrors: in.SplitExternalLocalOriginErrors,
		ConsecutiveLocalOriginFailures: convertUInt32(in.ConsecutiveLocalOriginFailures),
		ConsecutiveGatewayErrors:       convertUInt32(in.ConsecutiveGatewayErrors),
		Consecutive_5XxErrors:          convertUInt32(in.Consecutive5xxErrors),
		MaxEjectionPercent:             in.MaxEjectionPercent,
		MinHealthPercent:               in.MinHealthPercent,
	}
	var err error
	if out.Interval, err = convertDuration("interval", in.Interval); err != nil {
		return nil, err
	}
	if out.BaseEjectionTime, err = convertDuration("baseEjectionTime", in.BaseEjectionTime); err != nil {
		return nil, err
	}
	return out, nil
}

func convertTLS(in *picchuv1alpha1.ClientTLSSettings) (*istioapi.ClientTLSSettings, error) {
	if in == nil {
		return nil, nil
	}
	if _, ok := istioapi.ClientTLSSettings_TLSmode_name[in.Mode]; !ok {
		return nil, fmt.Errorf("mode: unknown value %d", in.Mode)
	}
	return &istioapi.ClientTLSSettings{
		Mode:               istioapi.ClientTLSSettings_TLSmode(in.Mode),
		ClientCertificate:  in.ClientCertificate,
		PrivateKey:         in.PrivateKey,
		CaCertificates:     in.CACertificates,
		CredentialName:     in.CredentialName,
		SubjectAltNames:    cloneStrings(in.SubjectAltNames),
		Sni:                in.SNI,
		InsecureSkipVerify: convertBool(in.InsecureSkipVerify),
	}, nil
}

// convertDuration converts a {seconds, nanos} duration; field names it in errors.
func convertDuration(field string, in *picchuv1alpha1.Duration) (*durationpb.Duration, error) {
	if in == nil {
		return nil, nil
	}
	out := &durationpb.Duration{Seconds: in.Seconds, Nanos: in.Nanos}
	if err := out.CheckValid(); err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	if out.AsDuration() < 0 {
		return nil, fmt.Errorf("%s: negative duration %s", field, out.AsDuration())
	}
	return out, nil
}

func convertUInt32(in *picchuv1alpha1.UInt32Value) *wrapperspb.UInt32Value {
	if in == nil {
		return nil
	}
	return wrapperspb.UInt32(in.Value)
}

func convertBool(in *picchuv1alpha1.BoolValue) *wrapperspb.BoolValue {
	if in == nil {
		return nil
	}
	return wrapperspb.Bool(in.Value)
}

func cloneStrings(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	return append([]string(nil), in...)
}

// minIstioDuration is the shortest duration Istio's CRDs accept for route
// timeouts and fault delays.
const minIstioDuration = time.Millisecond

// parseRouteDuration parses a duration string such as "15s" for a route.
// Zero means "not set" (Envoy's default of no timeout) and gives nil.
func parseRouteDuration(s string) (*durationpb.Duration, error) {
	if s == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return nil, err
	case d < 0:
		return nil, fmt.Errorf("negative duration %s", d)
	case d == 0:
		return nil, nil
	case d < minIstioDuration:
		return nil, fmt.Errorf("%s is under Istio's minimum of %s", d, minIstioDuration)
	}
	return durationpb.New(d), nil
}

// convertFault converts a FaultInjector fault. A delay without fixedDelay or
// an abort without a status injects nothing and is left out; a fault left
// with neither gives nil. An abort with both httpStatus and grpcStatus
// returns httpStatus, as Istio can only return one.
func convertFault(in *picchuv1alpha1.HTTPFaultInjection) (*istioapi.HTTPFaultInjection, error) {
	if in == nil {
		return nil, nil
	}
	out := &istioapi.HTTPFaultInjection{}
	if d := in.Delay; d != nil && d.FixedDelay != "" {
		fixed, err := parseRouteDuration(d.FixedDelay)
		if err != nil {
			return nil, fmt.Errorf("delay.fixedDelay %q: %w", d.FixedDelay, err)
		}
		if fixed != nil {
			out.Delay = &istioapi.HTTPFaultInjection_Delay{
				HttpDelayType: &istioapi.HTTPFaultInjection_Delay_FixedDelay{FixedDelay: fixed},
				Percent:       d.Percent, //nolint:staticcheck // carried over as given; Istio still reads it
				Percentage:    convertPercent(d.Percentage),
			}
		}
	}
	if a := in.Abort; a != nil {
		switch {
		case a.HTTPStatus != 0:
			out.Abort = &istioapi.HTTPFaultInjection_Abort{
				ErrorType:  &istioapi.HTTPFaultInjection_Abort_HttpStatus{HttpStatus: a.HTTPStatus},
				Percentage: convertPercent(a.Percentage),
			}
		case a.GRPCStatus != "":
			out.Abort = &istioapi.HTTPFaultInjection_Abort{
				ErrorType:  &istioapi.HTTPFaultInjection_Abort_GrpcStatus{GrpcStatus: a.GRPCStatus},
				Percentage: convertPercent(a.Percentage),
			}
		}
	}
	if out.Delay == nil && out.Abort == nil {
		return nil, nil
	}
	return out, nil
}

func convertPercent(in *picchuv1alpha1.Percent) *istioapi.Percent {
	if in == nil {
		return nil
	}
	return &istioapi.Percent{Value: in.Value}
}
