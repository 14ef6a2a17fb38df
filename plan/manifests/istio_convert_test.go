package manifests_test

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	istioapi "istio.io/api/networking/v1alpha3"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// fullTrafficPolicy sets every field of our mirror of Istio's TrafficPolicy
// (Test_DestinationRule_ConvertsEveryTrafficPolicyField checks that it does).
func fullTrafficPolicy() *picchuv1alpha1.TrafficPolicy {
	d := func(s int64, n int32) *picchuv1alpha1.Duration { return &picchuv1alpha1.Duration{Seconds: s, Nanos: n} }
	lb := &picchuv1alpha1.LoadBalancerSettings{
		LocalityLbSetting: &picchuv1alpha1.LocalityLoadBalancerSetting{
			Distribute:       []picchuv1alpha1.LocalityDistribute{{From: "us-east-1/*", To: map[string]uint32{"us-east-1/*": 80, "us-west-2/*": 20}}},
			Failover:         []picchuv1alpha1.LocalityFailover{{From: "us-east-1", To: "us-west-2"}},
			FailoverPriority: []string{"topology.kubernetes.io/region"},
			Enabled:          &picchuv1alpha1.BoolValue{Value: true},
		},
		WarmupDurationSecs: d(30, 1),
	}
	pool := &picchuv1alpha1.ConnectionPoolSettings{
		TCP: &picchuv1alpha1.TCPSettings{
			MaxConnections: 100, ConnectTimeout: d(1, 500000000),
			TCPKeepalive: &picchuv1alpha1.TCPKeepalive{Probes: 3, Time: d(7200, 2), Interval: d(75, 3)},
		},
		HTTP: &picchuv1alpha1.HTTPSettings{
			HTTP1MaxPendingRequests: 10, HTTP2MaxRequests: 200, MaxRequestsPerConnection: 5, MaxRetries: 4,
			IdleTimeout: d(60, 4), H2UpgradePolicy: 2, UseClientProtocol: true,
		},
	}
	outlier := &picchuv1alpha1.OutlierDetection{
		ConsecutiveErrors: 7, SplitExternalLocalOriginErrors: true,
		ConsecutiveLocalOriginFailures: &picchuv1alpha1.UInt32Value{Value: 2},
		ConsecutiveGatewayErrors:       &picchuv1alpha1.UInt32Value{Value: 3},
		Consecutive5xxErrors:           &picchuv1alpha1.UInt32Value{Value: 5},
		Interval:                       d(10, 5), BaseEjectionTime: d(30, 6), MaxEjectionPercent: 50, MinHealthPercent: 25,
	}
	tls := &picchuv1alpha1.ClientTLSSettings{
		Mode: 2, ClientCertificate: "/etc/certs/cert.pem", PrivateKey: "/etc/certs/key.pem",
		CACertificates: "/etc/certs/ca.pem", CredentialName: "shop-client", SubjectAltNames: []string{"shop.example.com"},
		SNI: "shop.example.com", InsecureSkipVerify: &picchuv1alpha1.BoolValue{Value: true},
	}
	return &picchuv1alpha1.TrafficPolicy{
		LoadBalancer: lb, ConnectionPool: pool, OutlierDetection: outlier, TLS: tls,
		PortLevelSettings: []picchuv1alpha1.PortTrafficPolicy{{
			Port: &picchuv1alpha1.PortSelector{Number: 9000}, LoadBalancer: lb, ConnectionPool: pool, OutlierDetection: outlier, TLS: tls,
		}},
	}
}

// fullIstioTrafficPolicy is fullTrafficPolicy written by hand in Istio's types.
func fullIstioTrafficPolicy() *istioapi.TrafficPolicy {
	d := func(s int64, n int32) *durationpb.Duration { return &durationpb.Duration{Seconds: s, Nanos: n} }
	lb := &istioapi.LoadBalancerSettings{
		LocalityLbSetting: &istioapi.LocalityLoadBalancerSetting{
			Distribute:       []*istioapi.LocalityLoadBalancerSetting_Distribute{{From: "us-east-1/*", To: map[string]uint32{"us-east-1/*": 80, "us-west-2/*": 20}}},
			Failover:         []*istioapi.LocalityLoadBalancerSetting_Failover{{From: "us-east-1", To: "us-west-2"}},
			FailoverPriority: []string{"topology.kubernetes.io/region"},
			Enabled:          wrapperspb.Bool(true),
		},
		WarmupDurationSecs: d(30, 1),
	}
	pool := &istioapi.ConnectionPoolSettings{
		Tcp: &istioapi.ConnectionPoolSettings_TCPSettings{
			MaxConnections: 100, ConnectTimeout: d(1, 500000000),
			TcpKeepalive: &istioapi.ConnectionPoolSettings_TCPSettings_TcpKeepalive{Probes: 3, Time: d(7200, 2), Interval: d(75, 3)},
		},
		Http: &istioapi.ConnectionPoolSettings_HTTPSettings{
			Http1MaxPendingRequests: 10, Http2MaxRequests: 200, MaxRequestsPerConnection: 5, MaxRetries: 4,
			IdleTimeout: d(60, 4), H2UpgradePolicy: istioapi.ConnectionPoolSettings_HTTPSettings_UPGRADE, UseClientProtocol: true,
		},
	}
	outlier := &istioapi.OutlierDetection{
		ConsecutiveErrors: 7, SplitExternalLocalOriginErrors: true, //nolint:staticcheck // the mirror carries it
		ConsecutiveLocalOriginFailures: wrapperspb.UInt32(2),
		ConsecutiveGatewayErrors:       wrapperspb.UInt32(3),
		Consecutive_5XxErrors:          wrapperspb.UInt32(5),
		Interval:                       d(10, 5), BaseEjectionTime: d(30, 6), MaxEjectionPercent: 50, MinHealthPercent: 25,
	}
	tls := &istioapi.ClientTLSSettings{
		Mode: istioapi.ClientTLSSettings_MUTUAL, ClientCertificate: "/etc/certs/cert.pem", PrivateKey: "/etc/certs/key.pem",
		CaCertificates: "/etc/certs/ca.pem", CredentialName: "shop-client", SubjectAltNames: []string{"shop.example.com"},
		Sni: "shop.example.com", InsecureSkipVerify: wrapperspb.Bool(true),
	}
	return &istioapi.TrafficPolicy{
		LoadBalancer: lb, ConnectionPool: pool, OutlierDetection: outlier, Tls: tls,
		PortLevelSettings: []*istioapi.TrafficPolicy_PortTrafficPolicy{{
			Port: &istioapi.PortSelector{Number: 9000}, LoadBalancer: lb, ConnectionPool: pool, OutlierDetection: outlier, Tls: tls,
		}},
	}
}

// httpPort is an app's one port: an app without ports has no DestinationRule.
var httpPort = []picchuv1alpha1.PortInfo{{Name: "http", Port: 80, ContainerPort: 8080}}

func Test_DestinationRule_ConvertsEveryTrafficPolicyField(t *testing.T) {
	in := fullTrafficPolicy()
	// A field added to the mirror and not set here fails this test, so the
	// comparison below covers every field.
	if unset := unsetFields(reflect.ValueOf(in), "trafficPolicy"); len(unset) > 0 {
		t.Fatalf("fullTrafficPolicy leaves fields unset: %v", unset)
	}
	dr, err := manifests.DestinationRule(manifests.Routing{App: "shop", Target: "production", Ports: httpPort, Releases: []manifests.Release{{Tag: "v1", TrafficPolicy: in}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dr.Spec.Subsets[0].TrafficPolicy, fullIstioTrafficPolicy(); !proto.Equal(got, want) {
		t.Errorf("converted policy\n got %v\nwant %v", got, want)
	}
	if !reflect.DeepEqual(in, fullTrafficPolicy()) {
		t.Errorf("the conversion changed its input")
	}
}

func Test_DestinationRule_RejectsUnconvertiblePolicies(t *testing.T) {
	cases := map[string]struct {
		edit func(*picchuv1alpha1.TrafficPolicy)
		want string
	}{
		"unknown tls mode": {
			func(p *picchuv1alpha1.TrafficPolicy) { p.TLS.Mode = 7 },
			"release v2: istio.trafficPolicy.tls.mode: unknown value 7",
		},
		"unknown h2 upgrade policy": {
			func(p *picchuv1alpha1.TrafficPolicy) { p.PortLevelSettings[0].ConnectionPool.HTTP.H2UpgradePolicy = 3 },
			"release v2: istio.trafficPolicy.portLevelSettings[0].connectionPool.http.h2_upgrade_policy: unknown value 3",
		},
		"nanos out of range": {
			func(p *picchuv1alpha1.TrafficPolicy) { p.OutlierDetection.Interval.Nanos = 2000000000 },
			"release v2: istio.trafficPolicy.outlierDetection.interval:",
		},
		"negative duration": {
			func(p *picchuv1alpha1.TrafficPolicy) { p.ConnectionPool.TCP.TCPKeepalive.Time.Seconds = -1 },
			"release v2: istio.trafficPolicy.connectionPool.tcp.tcpKeepalive.time:",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			policy := fullTrafficPolicy()
			// Give port-level settings their own copies, so edits reach one place.
			policy.PortLevelSettings[0].ConnectionPool = fullTrafficPolicy().ConnectionPool
			tc.edit(policy)
			r := manifests.Routing{App: "shop", Target: "production", Ports: httpPort, Releases: []manifests.Release{{Tag: "v1"}, {Tag: "v2", TrafficPolicy: policy}}}
			dr, err := manifests.DestinationRule(r)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v, want one starting %q", err, tc.want)
			}
			if dr != nil {
				t.Errorf("returned a DestinationRule with the error")
			}
		})
	}
}

// unsetFields lists the paths of the zero-valued fields, empty slices and
// maps, and nil pointers under v.
func unsetFields(v reflect.Value, path string) []string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return []string{path}
		}
		return unsetFields(v.Elem(), path)
	case reflect.Struct:
		var out []string
		for i := range v.NumField() {
			out = append(out, unsetFields(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
		return out
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return []string{path}
		}
		if v.Kind() == reflect.Map {
			return nil
		}
		var out []string
		for i := range v.Len() {
			out = append(out, unsetFields(v.Index(i), path+"[]")...)
		}
		return out
	default:
		if v.IsZero() {
			return []string{path}
		}
		return nil
	}
}
