package admission_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestRevision_SchemaRejectsInvalidSpecs sends each invalid spec to an API
// server with no webhook: the CRD schema alone must reject it, naming the
// field and saying why.
func TestRevision_SchemaRejectsInvalidSpecs(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		spec   string
		field  string // the field path the message must name
		reason string // what the message must say
	}{
		// Rejected although the original accepted them: each would have
		// broken at run time (docs/api.md, "Where Picchu's admission differs
		// from the original's").
		{"geometric factor of 1", "Revision", revisionJSON(`"release": {"geometricScaling": {"factor": 1}}`),
			"spec.targets[0].release.geometricScaling.factor", "must be greater than 1"},
		{"negative geometric factor", "Revision", revisionJSON(`"release": {"geometricScaling": {"factor": -2}}`),
			"spec.targets[0].release.geometricScaling.factor", "must be greater than 1"},
		{"negative geometric start", "Revision", revisionJSON(`"release": {"geometricScaling": {"start": -10}}`),
			"spec.targets[0].release.geometricScaling.start", "greater than or equal to 0"},
		{"negative linear increment", "Revision", revisionJSON(`"release": {"linearScaling": {"increment": -5}}`),
			"spec.targets[0].release.linearScaling.increment", "greater than or equal to 0"},
		{"negative release max", "Revision", revisionJSON(`"release": {"max": -1}`),
			"spec.targets[0].release.max", "greater than or equal to 0"},
		{"negative SLO allowance", "Revision", revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "serviceLevelIndicator": {"canary": {"allowancePercent": -1}}}]`),
			"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.allowancePercent", "greater than or equal to 0"},
		{"SLO allowance string that is not a number", "Revision", revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "serviceLevelIndicator": {"canary": {"allowancePercentString": "half"}}}]`),
			"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.allowancePercentString", "must be a non-negative percent"},
		{"objective percent above 100", "Revision", revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "objectivePercentString": "101"}]`),
			"spec.targets[0].serviceLevelObjectives[0].objectivePercentString", "must be a percent from 0 to 100"},
		{"negative release ttl", "Revision", revisionJSON(`"release": {"ttl": -1}`),
			"spec.targets[0].release.ttl", "greater than or equal to 0"},
		{"negative linear delay", "Revision", revisionJSON(`"release": {"linearScaling": {"delay": "-10s"}}`),
			"spec.targets[0].release.linearScaling.delay", "must be a non-negative duration"},
		{"unparsable geometric delay", "Revision", revisionJSON(`"release": {"geometricScaling": {"delay": "ten seconds"}}`),
			"spec.targets[0].release.geometricScaling.delay", "must be a non-negative duration"},
		{"unparsable external test timeout", "Revision", revisionJSON(`"externalTest": {"enabled": true, "timeout": "2 hours"}`),
			"spec.targets[0].externalTest.timeout", "must be a non-negative duration"},
		{"unparsable canary failAfter", "Revision", revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "serviceLevelIndicator": {"canary": {"failAfter": "soon"}}}]`),
			"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.failAfter", "must be a non-negative duration"},
		{"unparsable port timeout", "Revision", revisionJSON(`"ports": [{"name": "http", "istio": {"http": {"timeout": "1 minute"}}}]`),
			"spec.targets[0].ports[0].istio.http.timeout", "must be a non-negative duration"},
		{"unparsable retry timeout", "Revision", revisionJSON(`"ports": [{"name": "http", "istio": {"http": {"retries": {"attempts": 2, "perTryTimeout": "-1s"}}}}]`),
			"spec.targets[0].ports[0].istio.http.retries.perTryTimeout", "must be a non-negative duration"},
		{"karpenterDoNotDisrupt neither true nor a duration", "Revision", revisionJSON(`"karpenterDoNotDisrupt": "forever"`),
			"spec.targets[0].karpenterDoNotDisrupt", `must be "true" or a duration`},
		{"karpenterDoNotDisrupt and the same pod annotation", "Revision", revisionJSON(`"karpenterDoNotDisrupt": "true", "podAnnotations": {"karpenter.sh/do-not-disrupt": "true"}`),
			"spec.targets[0].karpenterDoNotDisrupt", "not both"},
		{"duplicate target names", "Revision", `{"app": {"name": "demo", "tag": "v1", "image": "demo:v1"},
			"targets": [{"name": "production", "fleet": "a"}, {"name": "production", "fleet": "b"}]}`,
			"spec.targets[1]", "Duplicate value"},
		{"no targets", "Revision", `{"app": {"name": "demo", "tag": "v1", "image": "demo:v1"}, "targets": []}`,
			"spec.targets", "should have at least 1 items"},
		{"duplicate port names", "Revision", revisionJSON(`"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81, "containerPort": 81}]`),
			"spec.targets[0].ports[1]", "Duplicate value"},
		{"port name with upper case", "Revision", revisionJSON(`"ports": [{"name": "HTTP"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name with an underscore", "Revision", revisionJSON(`"ports": [{"name": "http_alt"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name starting with a dash", "Revision", revisionJSON(`"ports": [{"name": "-http"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name ending with a dash", "Revision", revisionJSON(`"ports": [{"name": "http-"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name with a double dash", "Revision", revisionJSON(`"ports": [{"name": "grpc--web"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name without a letter", "Revision", revisionJSON(`"ports": [{"name": "8080"}]`),
			"spec.targets[0].ports[0].name", "should match"},
		{"port name longer than 15 characters", "Revision", revisionJSON(`"ports": [{"name": "http-for-the-api"}]`),
			"spec.targets[0].ports[0].name", "Too long"},
		{"port number out of range", "Revision", revisionJSON(`"ports": [{"name": "http", "port": 70000}]`),
			"spec.targets[0].ports[0].port", "less than or equal to 65535"},
		{"PDB with maxUnavailable and minAvailable", "Revision", revisionJSON(`"podDisruptionBudget": {"maxUnavailable": "10%", "minAvailable": 1}`),
			"spec.targets[0].podDisruptionBudget", "set maxUnavailable or minAvailable, not both"},
		{"defaultIngressPorts names an unknown port", "Revision", revisionJSON(`"ports": [{"name": "http"}], "defaultIngressPorts": {"private": "grpc"}`),
			"spec.targets[0].defaultIngressPorts", "must name a port of this target"},
		{"defaultIngressPorts names a port not on that ingress", "Revision", revisionJSON(`"ports": [{"name": "http", "ingresses": ["private"]}], "defaultIngressPorts": {"public": "http"}`),
			"spec.targets[0].defaultIngressPorts", "exposed on that ingress"},
		{"istio settings on a Gateway API target", "Revision", revisionJSON(`"router": "gatewayAPI", "istio": {"sidecar": {"egressHosts": ["./*"]}}`),
			"spec.targets[0].istio", "istio settings (a build's traffic policy, the sidecar's egress hosts) are Istio's"},
		{"port retries on a Gateway API target", "Revision", revisionJSON(`"router": "gatewayAPI", "ports": [{"name": "http", "port": 80, "containerPort": 8080, "istio": {"http": {"retries": {"attempts": 3}}}}]`),
			"spec.targets[0].ports", "a port's istio.http.retries are Istio's"},
		{"a gRPC port's timeout on a Gateway API target", "Revision", revisionJSON(`"router": "gatewayAPI", "ports": [{"name": "grpc", "port": 9000, "containerPort": 9000, "istio": {"http": {"timeout": "5s"}}}]`),
			"spec.targets[0].ports", "a gRPC port's istio.http.timeout is Istio's"},
		{"an unknown router", "Revision", revisionJSON(`"router": "linkerd"`),
			"spec.targets[0].router", "supported values: \"istio\", \"gatewayAPI\""},
		{"defaultIngressPorts names an unknown ingress", "Revision", revisionJSON(`"ports": [{"name": "http"}], "defaultIngressPorts": {"internal": "http"}`),
			"spec.targets[0].defaultIngressPorts", "keys must be ingress names"},
		{"duplicate container port numbers", "Revision", revisionJSON(`"ports": [{"name": "http", "port": 80, "containerPort": 8080}, {"name": "grpc", "port": 81, "containerPort": 8080}]`),
			"spec.targets[0].ports", "containerPort numbers must be unique per protocol"},
		{"ports left at the default numbers", "Revision", revisionJSON(`"ports": [{"name": "http"}, {"name": "grpc"}]`),
			"spec.targets[0].ports", "containerPort numbers must be unique per protocol"},
		{"negative port number", "Revision", revisionJSON(`"ports": [{"name": "http", "port": -1}]`),
			"spec.targets[0].ports[0].port", "greater than or equal to 0"},
		{"unknown scaling strategy", "Revision", revisionJSON(`"release": {"scalingStrategy": "exponential"}`),
			"spec.targets[0].release.scalingStrategy", `Unsupported value: "exponential"`},
		{"unknown port mode", "Revision", revisionJSON(`"ports": [{"name": "http", "mode": "internet"}]`),
			"spec.targets[0].ports[0].mode", `Unsupported value: "internet"`},
		{"request rate that is not a quantity", "Revision", revisionJSON(`"scale": {"targetRequestsRate": "fast"}`),
			"spec.targets[0].scale.targetRequestsRate", "must be a positive quantity"},
		{"request rate metric with a slash", "Revision", revisionJSON(`"scale": {"targetRequestsRate": "50", "requestsRateMetric": "istio/requests"}`),
			"spec.targets[0].scale.requestsRateMetric", "should match"},
		{"request rate metric named ..", "Revision", revisionJSON(`"scale": {"targetRequestsRate": "50", "requestsRateMetric": ".."}`),
			"spec.targets[0].scale.requestsRateMetric", "should match"},
		{"negative scale min", "Revision", revisionJSON(`"scale": {"min": -1}`),
			"spec.targets[0].scale.min", "greater than or equal to 0"},
		{"namespace name too long", "Revision", `{"app": {"name": "` + strings.Repeat("a", 40) + `", "tag": "v1", "image": "demo:v1"},
			"targets": [{"name": "` + strings.Repeat("b", 30) + `", "fleet": "production"}]}`,
			"spec.targets", "must fit a 63-character namespace name"},
		{"tag with an empty dot-separated part", "Revision", `{"app": {"name": "demo", "tag": "v1..2", "image": "demo:v1"},
			"targets": [{"name": "production", "fleet": "production"}]}`,
			"spec.app.tag", "should match"},
		{"tag with a part ending in a dash", "Revision", `{"app": {"name": "demo", "tag": "v1-.2", "image": "demo:v1"},
			"targets": [{"name": "production", "fleet": "production"}]}`,
			"spec.app.tag", "should match"},
		{"service account name that is not a DNS subdomain", "Revision", revisionJSON(`"serviceAccountName": "Shop_Worker"`),
			"spec.targets[0].serviceAccountName", "should match"},
		{"priority class name that is not a DNS subdomain", "Revision", revisionJSON(`"priorityClassName": "High Priority"`),
			"spec.targets[0].priorityClassName", "should match"},
		{"image with a leading space", "Revision", `{"app": {"name": "demo", "tag": "v1", "image": " registry.example/demo:v1"},
			"targets": [{"name": "production", "fleet": "production"}]}`,
			"spec.app.image", "should match"},
		{"image with a trailing newline", "Revision", `{"app": {"name": "demo", "tag": "v1", "image": "registry.example/demo:v1\n"},
			"targets": [{"name": "production", "fleet": "production"}]}`,
			"spec.app.image", "should match"},
		{"tag that is not a label value", "Revision", `{"app": {"name": "demo", "tag": "Feature/Branch", "image": "demo:v1"},
			"targets": [{"name": "production", "fleet": "production"}]}`,
			"spec.app.tag", "should match"},
		{"release silence without an alertname matcher", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "severity", "value": "page"}]}]`),
			"spec.targets[0].releaseSilences[0].matchers", "one matcher must name the alerts silenced"},
		{"release silence on a negative alertname matcher only", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "HighLatency", "isEqual": false}]}]`),
			"spec.targets[0].releaseSilences[0].matchers", "one matcher must name the alerts silenced"},
		{"release silence on every alert name", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": ".+", "isRegex": true}]}]`),
			"spec.targets[0].releaseSilences[0].matchers", "an alternation of alert names"},
		{"release silence of another app's namespace", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "A"}, {"name": "namespace", "value": "cart-production"}]}]`),
			"spec.targets", `a releaseSilences matcher on namespace must be namespace="<app>-<target>"`},
		{"release silence of every namespace", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "A"}, {"name": "namespace", "value": ".+", "isRegex": true}]}]`),
			"spec.targets[0].releaseSilences[0].matchers[1]", `a matcher on namespace must be namespace="<app>-<target>"`},
		{"release silence of every namespace but the app's", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "A"}, {"name": "namespace", "value": "demo-production", "isEqual": false}]}]`),
			"spec.targets[0].releaseSilences[0].matchers[1]", `a matcher on namespace must be namespace="<app>-<target>"`},
		{"fleet that is no label value", "Revision", `{"app": {"name": "demo", "tag": "v1", "image": "demo:v1"},
			"targets": [{"name": "production", "fleet": "prod fleet"}]}`,
			"spec.targets[0].fleet", "should match"},
		{"release silence without matchers", "Revision", revisionJSON(`"releaseSilences": [{"matchers": []}]`),
			"spec.targets[0].releaseSilences[0].matchers", "should have at least 1 items"},
		{"release silence matcher without a name", "Revision", revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "A"}, {"name": "", "value": "x"}]}]`),
			"spec.targets[0].releaseSilences[0].matchers[1].name", "should be at least 1 chars long"},
		{"nine release silences", "Revision", revisionJSON(`"releaseSilences": [` + strings.TrimSuffix(strings.Repeat(`{"matchers": [{"name": "alertname", "value": "A"}]},`, 9), ",") + `]`),
			"spec.targets[0].releaseSilences", "must have at most 8 items"},
		{"cluster scaling factor that is not a number", "Cluster", `{"enabled": false, "scalingFactorString": "half"}`,
			"spec.scalingFactorString", "must be a non-negative decimal number"},
		{"enabled cluster without config", "Cluster", `{"enabled": true}`,
			"spec.config", "an enabled cluster needs config"},
		{"cluster server that is not a URL", "Cluster", `{"enabled": true, "config": {"server": "10.0.0.1:6443"}}`,
			"spec.config.server", "should match"},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := create(ctx, bare.Delivery.Client, object(t, tt.kind, tt.spec))
			if err == nil {
				t.Fatalf("accepted; want a rejection of %s saying %q", tt.field, tt.reason)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.field+":") {
				t.Errorf("message does not name %s:\n%s", tt.field, msg)
			}
			if !strings.Contains(msg, tt.reason) {
				t.Errorf("message does not say %q:\n%s", tt.reason, msg)
			}
		})
	}
}

// TestRevision_SchemaAcceptsWhatEachRouterSays: what the Gateway API
// refuses is accepted on an Istio target, and a Gateway API target takes
// an HTTP port's timeout, a gRPC port without one, and no router at all
// means Istio.
func TestRevision_SchemaAcceptsWhatEachRouterSays(t *testing.T) {
	ctx := context.Background()
	for name, spec := range map[string]string{
		"istio settings, retries and a gRPC timeout on an Istio target": revisionJSON(`"router": "istio", "istio": {"sidecar": {"egressHosts": ["./*"]}},
			"ports": [{"name": "http", "port": 80, "containerPort": 8080, "istio": {"http": {"retries": {"attempts": 3}}}},
			{"name": "grpc", "port": 9000, "containerPort": 9000, "istio": {"http": {"timeout": "5s"}}}]`),
		"the same without a router": revisionJSON(`"istio": {"sidecar": {"egressHosts": ["./*"]}},
			"ports": [{"name": "grpc", "port": 9000, "containerPort": 9000, "istio": {"http": {"timeout": "5s"}}}]`),
		"a Gateway API target with an HTTP timeout and a gRPC port": revisionJSON(`"router": "gatewayAPI",
			"ports": [{"name": "http", "port": 80, "containerPort": 8080, "istio": {"http": {"timeout": "15s"}}},
			{"name": "grpc-api", "port": 9000, "containerPort": 9000}]`),
	} {
		t.Run(name, func(t *testing.T) {
			if err := create(ctx, bare.Delivery.Client, object(t, "Revision", spec)); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
