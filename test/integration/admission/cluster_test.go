package admission_test

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestCluster_SchemaRequiresTLS sends Clusters to the API server without
// webhooks: the schema alone refuses an http:// server unless
// allowPlainHTTP says so, naming spec.config.server.
func TestCluster_SchemaRequiresTLS(t *testing.T) {
	ctx := context.Background()
	c := bare.Delivery.Client
	for _, spec := range []string{
		`{"enabled": true, "config": {"server": "http://10.0.0.1:8080"}}`,
		`{"enabled": true, "config": {"server": "http://10.0.0.1:8080", "allowPlainHTTP": false}}`,
		`{"enabled": false, "config": {"server": "http://10.0.0.1:8080"}}`,
	} {
		err := create(ctx, c, object(t, "Cluster", spec))
		if err == nil {
			t.Errorf("%s: accepted", spec)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.config.server:") ||
			!strings.Contains(err.Error(), "must be an https:// URL") || !strings.Contains(err.Error(), "allowPlainHTTP") {
			t.Errorf("%s: error %v, want spec.config.server to be an https:// URL, naming allowPlainHTTP", spec, err)
		}
	}
	for _, spec := range []string{
		`{"enabled": true, "config": {"server": "https://10.0.0.1:6443"}}`,
		`{"enabled": true, "config": {"server": "http://127.0.0.1:8001", "allowPlainHTTP": true}}`,
	} {
		if err := create(ctx, c, object(t, "Cluster", spec)); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// TestCluster_PlainHTTPPrinterColumn: "kubectl get clusters -o wide" shows
// whether Picchu reaches a cluster over plain HTTP.
func TestCluster_PlainHTTPPrinterColumn(t *testing.T) {
	ctx := context.Background()
	c := bare.Delivery.Client
	cluster := object(t, "Cluster", `{"enabled": true, "config": {"server": "http://127.0.0.1:8001", "allowPlainHTTP": true}}`)
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cluster.Object, true, "status", "plainHTTP")
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	expect(t, "clusters", table(t, bare.Delivery.Config, "clusters", cluster.GetName()), map[string]any{"Plain-HTTP": true})
}

// TestCluster_SchemaChecksPreflight sends Clusters to the API server
// without webhooks: the schema alone refuses preflight alerts that are not
// alert names, label names that are not label names, and labels without
// alerts, naming the field; it takes a query, alerts and their labels.
func TestCluster_SchemaChecksPreflight(t *testing.T) {
	ctx := context.Background()
	c := bare.Delivery.Client
	for _, tc := range []struct{ spec, field, says string }{
		{`{"enabled": true, "preflight": {"alerts": ["Kube Node Not Ready"]}}`, "spec.preflight.alerts[0]", "should match"},
		{`{"enabled": true, "preflight": {"alerts": ["A"], "alertLabels": {"0cluster": "west"}}}`, "spec.preflight.alertLabels", "label names are letters, digits and underscores"},
		{`{"enabled": true, "preflight": {"alertLabels": {"cluster": "west"}}}`, "spec.preflight.alertLabels", "name some alerts"},
	} {
		err := create(ctx, c, object(t, "Cluster", tc.spec))
		if err == nil {
			t.Errorf("%s: accepted", tc.spec)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: error %v, want %s: %s", tc.spec, err, tc.field, tc.says)
		}
	}
	for _, spec := range []string{
		`{"enabled": false, "preflight": {"alerts": ["KubeNodeNotReady", "etcd:NoLeader"], "alertLabels": {"cluster": "west", "_region": "us"}}}`,
		`{"enabled": false, "preflight": {"query": "sum(up{job=\"node\"}) < 3"}}`,
		`{"enabled": false, "preflight": {}}`,
	} {
		if err := create(ctx, c, object(t, "Cluster", spec)); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}
