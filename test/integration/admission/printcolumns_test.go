package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// table asks the API server for a resource as kubectl get shows it.
func table(t *testing.T, cfg *rest.Config, plural, name string) map[string]any {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/picchu.medium.engineering/v1alpha1/namespaces/picchu/%s/%s",
		strings.TrimSuffix(cfg.Host, "/"), plural, name)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as Table: %d %s", url, resp.StatusCode, body)
	}
	tbl := &metav1.Table{}
	if err := json.Unmarshal(body, tbl); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	if len(tbl.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(tbl.Rows))
	}
	out := map[string]any{}
	for i, col := range tbl.ColumnDefinitions {
		out[col.Name] = tbl.Rows[0].Cells[i]
	}
	return out
}

// TestCRDs_PrinterColumns checks what "kubectl get" shows for Revisions,
// ReleaseManagers and Clusters.
func TestCRDs_PrinterColumns(t *testing.T) {
	ctx := context.Background()
	c := bare.Delivery.Client
	cfg := bare.Delivery.Config

	rev := object(t, "Revision", revisionJSON(""))
	if err := c.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(rev.Object, "production=releasing 40%", "status", "summary")
	if err := c.Status().Update(ctx, rev); err != nil {
		t.Fatal(err)
	}
	expect(t, "revisions", table(t, cfg, "revisions", rev.GetName()),
		map[string]any{"App": "demo", "Tag": "v1", "Targets": "production=releasing 40%"})

	rm := object(t, "ReleaseManager", `{"app": "demo", "target": "production", "fleet": "production"}`)
	if err := c.Create(ctx, rm); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedMap(rm.Object, map[string]any{"tag": "v2", "percent": int64(40)}, "status", "releasing")
	if err := c.Status().Update(ctx, rm); err != nil {
		t.Fatal(err)
	}
	expect(t, "releasemanagers", table(t, cfg, "releasemanagers", rm.GetName()),
		map[string]any{"App": "demo", "Target": "production", "Releasing": "v2", "Percent": float64(40)})

	cluster := object(t, "Cluster", `{"enabled": true, "config": {"server": "https://10.0.0.1:6443"}}`)
	cluster.SetLabels(map[string]string{"picchu.medium.engineering/fleet": "production"})
	if err := c.Create(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedSlice(cluster.Object, []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "Reachable", "message": "v1.36.3",
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}}, "status", "conditions")
	if err := c.Status().Update(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	expect(t, "clusters", table(t, cfg, "clusters", cluster.GetName()),
		map[string]any{"Enabled": true, "Fleet": "production", "Ready": "True"})
}

func expect(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for col, v := range want {
		if got[col] != v {
			t.Errorf("kubectl get %s: column %s = %#v, want %#v (row %v)", what, col, got[col], v, got)
		}
	}
}
