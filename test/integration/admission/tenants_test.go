package admission_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestRevision_RefusesWhatCouldReachAnotherTeamsVerdicts: what a Revision
// writes to the shared Prometheus must not set the labels builds are
// judged by (namespace, the cluster label), record series, or claim
// another app. The schema alone refuses recording rules and the label
// namespace in alertRules, so that they hold with the webhook down; the
// webhook, set up as main.go sets it up, refuses the rest, each naming its
// field. The label shapes a team's own alerts need (slo, tag, canary, its
// own app) are accepted.
func TestRevision_RefusesWhatCouldReachAnotherTeamsVerdicts(t *testing.T) {
	ctx := context.Background()
	schema := []struct{ name, fields, field string }{
		{"a recording rule", `"alertRules": [{"record": "shop:availability:total", "expr": "vector(1000)"}]`, "spec.targets[0].alertRules"},
		{"the label namespace", `"alertRules": [{"alert": "A", "expr": "vector(1)", "labels": {"namespace": "shop-production"}}]`, "spec.targets[0].alertRules"},
	}
	for _, tc := range schema {
		for name, c := range map[string]client.Client{"bare": bare.Delivery.Client, "hooked": hookedClient} {
			err := c.Create(ctx, object(t, "Revision", revisionJSON(tc.fields)))
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("%s (%s): got %v, want an invalid error naming %s", tc.name, name, err, tc.field)
			}
		}
	}
	webhook := []struct{ name, fields, field string }{
		{"the cluster label", `"alertRules": [{"alert": "A", "expr": "vector(1)", "labels": {"cluster": "west"}}]`, "spec.targets[0].alertRules[0].labels[cluster]"},
		{"another app", `"alertRules": [{"alert": "A", "expr": "vector(1)", "labels": {"app": "shop", "slo": "true"}}]`, "spec.targets[0].alertRules[0].labels[app]"},
		{"an expression writing the namespace", `"alertRules": [{"alert": "A", "expr": "label_replace(vector(1), \"namespace\", \"shop-production\", \"\", \"\")"}]`, "spec.targets[0].alertRules[0].expr"},
		{"honorLabels", `"serviceMonitors": [{"name": "m", "spec": {"selector": {}, "endpoints": [{"port": "http", "honorLabels": true}]}}]`, "spec.targets[0].serviceMonitors[0].spec.endpoints[0].honorLabels"},
		{"a relabeling into namespace", `"serviceMonitors": [{"name": "m", "spec": {"selector": {}, "endpoints": [{"port": "http", "metricRelabelings": [{"targetLabel": "namespace", "replacement": "shop-production"}]}]}}]`,
			"spec.targets[0].serviceMonitors[0].spec.endpoints[0].metricRelabelings[0].targetLabel"},
		{"alert labels with the namespace", `"serviceLevelObjectiveLabels": {"alertLabels": {"namespace": "shop-production"}}`, "spec.targets[0].serviceLevelObjectiveLabels.alertLabels[namespace]"},
	}
	for _, tc := range webhook {
		err := hookedClient.Create(ctx, object(t, "Revision", revisionJSON(tc.fields)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an invalid error naming %s", tc.name, err, tc.field)
		}
	}
	own := `"alertRules": [{"alert": "DemoErrors", "expr": "label_replace(vector(1), \"tag\", \"v1\", \"\", \"\")", "labels": {"app": "demo", "slo": "true", "canary": "true"}}],
		"serviceMonitors": [{"name": "m", "spec": {"selector": {}, "endpoints": [{"port": "http", "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_label_tag"], "targetLabel": "tag"}]}]}}]`
	if err := hookedClient.Create(ctx, object(t, "Revision", revisionJSON(own))); err != nil {
		t.Errorf("a team's own alert and monitor were refused: %v", err)
	}
}
