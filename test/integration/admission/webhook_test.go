package admission_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// TestRevisionWebhook_FillsRoutingDefaults checks that the mutating webhook
// stores each port's ingresses and each ingress's default port.
func TestRevisionWebhook_FillsRoutingDefaults(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name          string
		ports         string
		wantIngresses map[string][]picchuv1alpha1.Ingress
		wantDefaults  map[string]string
	}{
		{
			name:  "public http and local status",
			ports: `"ports": [{"name": "http", "mode": "public"}, {"name": "status", "port": 4444, "containerPort": 4444, "mode": "local"}]`,
			wantIngresses: map[string][]picchuv1alpha1.Ingress{
				"http": {picchuv1alpha1.IngressPrivate, picchuv1alpha1.IngressPublic}, "status": nil,
			},
			wantDefaults: map[string]string{"private": "http", "public": "http"},
		},
		{
			name:  "port without mode is private",
			ports: `"ports": [{"name": "web"}]`,
			wantIngresses: map[string][]picchuv1alpha1.Ingress{
				"web": {picchuv1alpha1.IngressPrivate},
			},
			wantDefaults: map[string]string{"private": "web"},
		},
		{
			name: "the port flagged default is chosen",
			ports: `"ports": [{"name": "http", "mode": "public", "port": 80, "containerPort": 8080},
				{"name": "grpc", "mode": "public", "default": true, "port": 81, "containerPort": 8081}]`,
			wantIngresses: map[string][]picchuv1alpha1.Ingress{
				"http": {picchuv1alpha1.IngressPrivate, picchuv1alpha1.IngressPublic},
				"grpc": {picchuv1alpha1.IngressPrivate, picchuv1alpha1.IngressPublic},
			},
			wantDefaults: map[string]string{"private": "grpc", "public": "grpc"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := object(t, "Revision", revisionJSON(tt.ports))
			if err := hookedClient.Create(ctx, u); err != nil {
				t.Fatalf("creating revision: %v", err)
			}
			rev := &picchuv1alpha1.Revision{}
			if err := hookedClient.Get(ctx, client.ObjectKeyFromObject(u), rev); err != nil {
				t.Fatal(err)
			}
			target := rev.Spec.Targets[0]
			for _, p := range target.Ports {
				if !reflect.DeepEqual(p.Ingresses, tt.wantIngresses[p.Name]) {
					t.Errorf("stored port %s ingresses = %v, want %v", p.Name, p.Ingresses, tt.wantIngresses[p.Name])
				}
			}
			if !reflect.DeepEqual(target.DefaultIngressPorts, tt.wantDefaults) {
				t.Errorf("stored defaultIngressPorts = %v, want %v", target.DefaultIngressPorts, tt.wantDefaults)
			}
		})
	}
}

// TestWebhooks_RejectWhatNeedsCode checks the rejections only the validating
// webhooks can make, each naming the field.
func TestWebhooks_RejectWhatNeedsCode(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, kind, spec, field, reason string
	}{
		{"ingress with ports and no default port", "Revision",
			revisionJSON(`"ports": [{"name": "a", "port": 80, "containerPort": 80}, {"name": "b", "port": 81, "containerPort": 81}]`),
			"spec.targets[0].defaultIngressPorts[private]", "name its default port here"},
		{"two ports flagged default", "Revision",
			revisionJSON(`"ports": [{"name": "a", "default": true, "port": 80, "containerPort": 80}, {"name": "b", "default": true, "port": 81, "containerPort": 81}]`),
			"spec.targets[0].ports", "only one port exposed on the private ingress may be flagged default"},
		{"invalid config selector", "Revision",
			revisionJSON(`"configSelector": {"matchExpressions": [{"key": "app", "operator": "Sometimes"}]}`),
			"spec.targets[0].configSelector", "is not a valid label selector operator"},
		{"duplicate SLO names", "Revision",
			revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "enabled": true}, {"name": "availability", "enabled": true}]`),
			"spec.targets[0].serviceLevelObjectives[1].name", "Duplicate value"},
		{"env var without a name", "Revision", revisionJSON(`"env": [{"name": "", "value": "x"}]`),
			"spec.targets[0].env[0].name", "Required value"},
		{"env var name with '='", "Revision", revisionJSON(`"env": [{"name": "A=B", "value": "x"}]`),
			"spec.targets[0].env[0].name", "Invalid value"},
		{"env var with a value and a source", "Revision", revisionJSON(`"env": [{"name": "POD", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]`),
			"spec.targets[0].env[0].valueFrom", "may not be specified when `value` is not empty"},
		{"env var reading an unknown pod field", "Revision", revisionJSON(`"env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers"}}}]`),
			"spec.targets[0].env[0].valueFrom.fieldRef.fieldPath", "Unsupported value"},
		{"env var reading a config map key with a space", "Revision", revisionJSON(`"env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "shop", "key": "the mode"}}}]`),
			"spec.targets[0].env[0].valueFrom.configMapKeyRef.key", "Invalid value"},
		{"negative resource request", "Revision", revisionJSON(`"resources": {"requests": {"cpu": "-100m"}}`),
			"spec.targets[0].resources.requests[cpu]", "must be greater than or equal to 0"},
		{"request above its limit", "Revision", revisionJSON(`"resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}`),
			"spec.targets[0].resources.requests", "must be less than or equal to memory limit of 1Gi"},
		{"extended resource without a limit", "Revision", revisionJSON(`"resources": {"requests": {"nvidia.com/gpu": 1}}`),
			"spec.targets[0].resources.limits", "needs a limit"},
		{"resource a container cannot ask for", "Revision", revisionJSON(`"resources": {"requests": {"pods": 1}}`),
			"spec.targets[0].resources.requests[pods]", "must be a standard resource for containers"},
		{"probe with two handlers", "Revision", revisionJSON(`"livenessProbe": {"httpGet": {"port": 8080}, "tcpSocket": {"port": 8080}}`),
			"spec.targets[0].livenessProbe.tcpSocket", "may not specify more than 1 handler type"},
		{"probe without a handler", "Revision", revisionJSON(`"readinessProbe": {"periodSeconds": 5}`),
			"spec.targets[0].readinessProbe", "must specify a handler type"},
		{"probe on a port name Kubernetes rejects", "Revision", revisionJSON(`"readinessProbe": {"httpGet": {"port": "HTTP"}}`),
			"spec.targets[0].readinessProbe.httpGet.port", "Invalid value"},
		{"liveness probe with two successes", "Revision", revisionJSON(`"livenessProbe": {"tcpSocket": {"port": 8080}, "successThreshold": 2}`),
			"spec.targets[0].livenessProbe.successThreshold", "must be 1"},
		{"readiness probe with a grace period", "Revision", revisionJSON(`"readinessProbe": {"tcpSocket": {"port": 8080}, "terminationGracePeriodSeconds": 30}`),
			"spec.targets[0].readinessProbe.terminationGracePeriodSeconds", "must not be set for readinessProbes"},
		{"negative probe period", "Revision", revisionJSON(`"readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": -1}`),
			"spec.targets[0].readinessProbe.periodSeconds", "must be greater than or equal to 0"},
		{"pod annotation key that is not a qualified name", "Revision", revisionJSON(`"podAnnotations": {"team owner": "shop"}`),
			"spec.targets[0].podAnnotations", "Invalid value"},
		{"disruption budget above 100%", "Revision", revisionJSON(`"podDisruptionBudget": {"maxUnavailable": "150%"}`),
			"spec.targets[0].podDisruptionBudget.maxUnavailable", "must not be greater than 100%"},
		{"negative disruption budget", "Revision", revisionJSON(`"podDisruptionBudget": {"minAvailable": -1}`),
			"spec.targets[0].podDisruptionBudget.minAvailable", "must be greater than or equal to 0"},
		{"disruption budget that is neither a number nor a percent", "Revision", revisionJSON(`"podDisruptionBudget": {"maxUnavailable": "half"}`),
			"spec.targets[0].podDisruptionBudget.maxUnavailable", "Invalid value"},
		{"unknown unhealthy pod eviction policy", "Revision", revisionJSON(`"podDisruptionBudget": {"unhealthyPodEvictionPolicy": "Sometimes"}`),
			"spec.targets[0].podDisruptionBudget.unhealthyPodEvictionPolicy", "Unsupported value"},
		{"release silence of slo=\"true\" alerts", "Revision",
			revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "HighLatency"}, {"name": "slo", "value": "true"}]}]`),
			"spec.targets[0].releaseSilences[0].matchers[1]", "Picchu's SLO and canary alerts are never silenced"},
		{"release silence of an SLO's canary alert", "Revision",
			revisionJSON(`"serviceLevelObjectives": [{"name": "availability", "enabled": true}], "releaseSilences": [{"matchers": [{"name": "alertname", "value": "availability_canary|HighLatency", "isRegex": true}]}]`),
			"spec.targets[0].releaseSilences[0].matchers", `the alertname matchers match "availability_canary"`},
		{"release silence with a regular expression that does not compile", "Revision",
			revisionJSON(`"releaseSilences": [{"matchers": [{"name": "alertname", "value": "HighLatency"}, {"name": "severity", "value": "page(", "isRegex": true}]}]`),
			"spec.targets[0].releaseSilences[0].matchers[1].value", "not a regular expression"},
		{"CA that is not PEM", "Cluster", `{"enabled": true, "config": {"server": "https://10.0.0.1:6443", "certificate-authority-data": "bm90IGEgY2VydGlmaWNhdGU="}}`,
			"spec.config.certificate-authority-data", "holds no PEM certificate"},
		{"unparsable secret label selector", "ClusterSecrets", `{"source": {"namespace": "picchu", "labelSelector": "app in (a"}, "target": {"namespace": "app"}}`,
			"spec.source.labelSelector", "Invalid value"},
		{"copies into a protected namespace", "ClusterSecrets", `{"source": {"namespace": "picchu"}, "target": {"namespace": "kube-system"}}`,
			"spec.target.namespace", `is protected ("kube-*")`},
		{"copies into an add-on's namespace", "ClusterSecrets", `{"source": {"namespace": "picchu"}, "target": {"namespace": "istio-system"}}`,
			"spec.target.namespace", `is protected ("istio-system")`},
		{"unparsable cluster field selector", "ClusterSecrets", `{"source": {"namespace": "picchu"}, "target": {"namespace": "app", "fieldSelector": "metadata.name"}}`,
			"spec.target.fieldSelector", "Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := hookedClient.Create(ctx, object(t, tt.kind, tt.spec))
			if err == nil {
				t.Fatalf("accepted; want a rejection of %s", tt.field)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.field+":") || !strings.Contains(msg, tt.reason) {
				t.Errorf("message does not name %s and say %q:\n%s", tt.field, tt.reason, msg)
			}
			// The same object passes the schema alone: this rule is the webhook's.
			if tt.kind == "Revision" {
				if err := bare.Delivery.Client.Create(ctx, object(t, tt.kind, tt.spec)); err != nil {
					t.Errorf("the bare API server rejected it too, so the webhook is not what is tested: %v", err)
				}
			}
		})
	}
}

// TestRevisionWebhook_WarnsAboutLikelyMistakes checks that settings that are
// allowed but likely wrong come back as admission warnings.
func TestRevisionWebhook_WarnsAboutLikelyMistakes(t *testing.T) {
	ctx := context.Background()
	warnings.take()
	u := object(t, "Revision", revisionJSON(`"scale": {"min": 4}, "canary": {"percent": 30, "ttl": 60}, "release": {"max": 20}`))
	if err := hookedClient.Create(ctx, u); err != nil {
		t.Fatalf("creating revision: %v", err)
	}
	got := strings.Join(warnings.take(), "\n")
	for _, want := range []string{
		"spec.targets[0].scale: min (4) is above max (1)",
		"spec.targets[0].canary.percent: canary percent (30) is above release max (20)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
}

// TestRevisionWebhook_DefaultsScaleToMin checks that an unset scale.default
// becomes scale.min (the original made it 1, and ramps stalled at a few pods).
func TestRevisionWebhook_DefaultsScaleToMin(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		scale string
		want  int32
	}{
		{`"scale": {"min": 16, "max": 96, "targetCPUUtilizationPercentage": 70}`, 16},
		{`"scale": {"min": 16, "default": 20, "max": 96}`, 20},
		{`"scale": {"max": 3}`, 1},
	} {
		u := object(t, "Revision", revisionJSON(`"ports": [{"name": "http"}], `+tc.scale))
		if err := hookedClient.Create(ctx, u); err != nil {
			t.Fatalf("creating revision with %s: %v", tc.scale, err)
		}
		rev := &picchuv1alpha1.Revision{}
		if err := hookedClient.Get(ctx, client.ObjectKeyFromObject(u), rev); err != nil {
			t.Fatal(err)
		}
		if got := rev.Spec.Targets[0].Scale.Default; got != tc.want {
			t.Errorf("%s: stored scale.default %d, want %d", tc.scale, got, tc.want)
		}
	}
}
