package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

var nameSeq atomic.Int64

// uniqueName returns a name no other test object has.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nameSeq.Add(1))
}

// object builds an unstructured Picchu object from a JSON spec, so that tests
// can send values the Go types cannot hold (negative durations, unknown enum
// values, wrong types).
func object(t *testing.T, kind, specJSON string) *unstructured.Unstructured {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		t.Fatalf("bad test spec %s: %v", specJSON, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(picchuv1alpha1.GroupVersion.String())
	u.SetKind(kind)
	u.SetNamespace("picchu")
	u.SetName(uniqueName(strings.ToLower(kind)))
	return u
}

// revisionJSON is a small valid Revision spec; %s is replaced by extra
// target fields.
func revisionJSON(targetFields string) string {
	if targetFields != "" {
		targetFields = ", " + targetFields
	}
	return `{"app": {"name": "demo", "tag": "v1", "image": "registry.example/demo:v1"},
		"targets": [{"name": "production", "fleet": "production"` + targetFields + `}]}`
}

func create(ctx context.Context, c client.Client, obj client.Object) error {
	return c.Create(ctx, obj)
}

// TestCRDs_CreateEveryKind creates each kind in a bare API server and writes
// its status through the status subresource.
func TestCRDs_CreateEveryKind(t *testing.T) {
	ctx := context.Background()
	c := bare.Delivery.Client
	objects := map[string]string{
		"Revision":       revisionJSON(`"ports": [{"name": "http"}]`),
		"ReleaseManager": `{"app": "demo", "target": "production", "fleet": "production"}`,
		"Cluster":        `{"enabled": false}`,
		"ClusterSecrets": `{"source": {"namespace": "picchu"}, "target": {"namespace": "app"}}`,
		"Mirror":         `{"clusterName": "mirror"}`,
		"FaultInjector":  `{"httpPortFaults": [{"portSelector": {"number": 80}, "fault": {"abort": {"httpStatus": 503, "percentage": {"value": 10}}}}]}`,
	}
	for kind, spec := range objects {
		t.Run(kind, func(t *testing.T) {
			obj := object(t, kind, spec)
			if err := create(ctx, c, obj); err != nil {
				t.Fatalf("creating %s: %v", kind, err)
			}
			cond := map[string]any{
				"type": "Ready", "status": "True", "reason": "Test", "message": "written by the test",
				"lastTransitionTime": "2026-01-01T00:00:00Z",
			}
			if err := unstructured.SetNestedSlice(obj.Object, []any{cond}, "status", "conditions"); err != nil {
				t.Fatal(err)
			}
			if err := c.Status().Update(ctx, obj); err != nil {
				t.Fatalf("updating %s status: %v", kind, err)
			}
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("reading %s back: %v", kind, err)
			}
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			if len(conds) != 1 {
				t.Fatalf("%s status conditions = %v, want the one written", kind, conds)
			}
		})
	}
}

// TestRevision_DefaultsAreStored checks that the original's defaults are
// applied by the API server alone and visible in the stored object.
func TestRevision_DefaultsAreStored(t *testing.T) {
	ctx := context.Background()
	u := object(t, "Revision", revisionJSON(`"ports": [{"name": "http"}], "externalTest": {"enabled": true}`))
	if err := create(ctx, bare.Delivery.Client, u); err != nil {
		t.Fatalf("creating revision: %v", err)
	}
	rev := &picchuv1alpha1.Revision{}
	if err := bare.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(u), rev); err != nil {
		t.Fatalf("reading revision: %v", err)
	}
	target := rev.Spec.Targets[0]
	port := target.Ports[0]
	r := target.Release
	checks := []struct {
		field     string
		got, want any
	}{
		{"ports[0].ingressPort", port.IngressPort, int32(443)},
		{"ports[0].port", port.Port, int32(80)},
		{"ports[0].containerPort", port.ContainerPort, int32(80)},
		{"ports[0].protocol", string(port.Protocol), "TCP"},
		{"ports[0].mode", port.Mode, picchuv1alpha1.PortModePrivate},
		{"release.max", r.Max, int32(100)},
		{"release.scalingStrategy", r.ScalingStrategy, picchuv1alpha1.ScalingStrategyGeometric},
		{"release.geometricScaling.start", r.GeometricScaling.Start, int32(10)},
		{"release.geometricScaling.factor", r.GeometricScaling.Factor, int32(2)},
		{"release.geometricScaling.delay", durationString(r.GeometricScaling.Delay), "10s"},
		{"release.linearScaling.increment", r.LinearScaling.Increment, int32(5)},
		{"release.linearScaling.delay", durationString(r.LinearScaling.Delay), "10s"},
		{"release.schedule", r.Schedule, picchuv1alpha1.ScheduleInhumane},
		{"release.ttl", r.TTL, int64(432000)},
		// Unset: the webhook writes min (or 1); the schema has no default
		// for it, as the original's had none.
		{"scale.default", target.Scale.Default, int32(0)},
		{"scale.max", target.Scale.Max, int32(1)},
		{"scale.requestsRateMetric", target.Scale.RequestsRateMetric, "istio_requests_rate"},
		{"externalTest.timeout", durationString(target.ExternalTest.Timeout), "2h0m0s"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("spec.targets[0].%s = %v, want %v", c.field, c.got, c.want)
		}
	}

	cluster := object(t, "Cluster", `{"enabled": false}`)
	if err := create(ctx, bare.Delivery.Client, cluster); err != nil {
		t.Fatalf("creating cluster: %v", err)
	}
	if got, _, _ := unstructured.NestedString(cluster.Object, "spec", "scalingFactorString"); got != "1.0" {
		t.Errorf("cluster spec.scalingFactorString = %q, want 1.0", got)
	}
}

func durationString(d *metav1.Duration) string {
	if d == nil {
		return "<nil>"
	}
	return d.Duration.String()
}
