package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// The tests in this file hold the schema to the Go decoder: every edge case
// the schema's syntax allows goes to the API server with no webhook and to
// the decoder Picchu reads the field with. What the server stores must
// decode, to the value Go parses; what it rejects, Go must reject too,
// unless the case says why the schema is deliberately stricter.

// edge is one value for a field, with what the schema does with it.
type edge struct {
	value string
	// stored says the API server stores it.
	stored bool
	// stricter, for a value the schema rejects and Go decodes, says why.
	stricter string
}

// durationEdges are the edge cases of a duration, with the verdict of the
// schema for the four kinds of duration field: non-negative (delays,
// timeouts, failAfter), Istio (port timeouts: 0, or at least 1ms),
// karpenterDoNotDisrupt ("true" or a duration, no bare 0) and fixedDelay
// (like Istio, no bare 0).
var durationEdges = []struct {
	value                           string
	nonNegative, istio, karp, fault bool
	stricter                        string
}{
	{"0", true, true, false, false, "a bare 0 is not among the positive forms karpenterDoNotDisrupt and fixedDelay take"},
	{"0s", true, true, true, true, ""},
	{"0.0s", true, true, true, true, ""},
	{".5s", true, true, true, true, ""},
	{"5.s", true, true, true, true, ""},
	{"1.5h", true, true, true, true, ""},
	{"1h30m", true, true, true, true, ""},
	{"1h1h", true, true, true, true, ""},
	{"1ns", true, false, true, false, ""},
	{"0.000000001ns", true, true, true, true, ""}, // rounds to 0
	{"1µs", true, false, true, false, ""},         // micro sign
	{"1μs", true, false, true, false, ""},         // Greek mu: Go reads both
	{"999us", true, false, true, false, ""},
	{"0.5ms", true, false, true, false, ""},
	{"1ms", true, true, true, true, ""},
	{"1000us", true, true, true, true, ""},
	{strings.Repeat("1h1m1s1ms1us1ns", 4), true, true, true, true, ""}, // 64 characters, 24 components
	{"2562047h", true, true, true, true, ""},
	{"2562047h47m16.854775807s", true, true, true, true, ""}, // the longest Go holds
	{"9223372036854775807ns", true, true, true, true, ""},
	{"2562047h47m16.854775808s", false, false, false, false, ""}, // 1ns longer: overflows
	{"2562048h", false, false, false, false, ""},
	{"9223372036854775808ns", false, false, false, false, ""},
	{"99999999999999999999ns", false, false, false, false, ""},
	{"1000000h1000000h1000000h", false, false, false, false, ""}, // each fits, the sum does not
	{strings.Repeat("0", 63) + "1s", false, false, false, false, "at most 64 characters"},
	{"", false, false, false, false, ""},
	{"-1s", false, false, false, false, ""},
	{"-0s", false, false, false, false, "no sign"},
	{"+1s", false, false, false, false, "no sign"},
	{"1H", false, false, false, false, ""},
	{"1e3s", false, false, false, false, ""},
	{"10", false, false, false, false, ""},
	{" 1s", false, false, false, false, ""},
	{"1.5.5s", false, false, false, false, ""},
	{"1d", false, false, false, false, ""},
	{"true", false, false, true, false, ""},
}

// durationField is a duration field: where it is, and how Picchu reads it.
type durationField struct {
	path string
	kind string
	// spec is the object's spec with the value (JSON) in the field.
	spec func(value string) string
	// read is what the typed object holds in the field.
	read func(obj client.Object) (time.Duration, bool)
	// class picks the verdict column of durationEdges.
	class string
}

func durationFields() []durationField {
	target := func(fields string) func(string) string {
		return func(v string) string { return revisionJSON(fmt.Sprintf(fields, v)) }
	}
	firstTarget := func(obj client.Object) picchuv1alpha1.RevisionTarget {
		return obj.(*picchuv1alpha1.Revision).Spec.Targets[0]
	}
	metaDuration := func(d *metav1.Duration) (time.Duration, bool) {
		if d == nil {
			return 0, false
		}
		return d.Duration, true
	}
	parsed := func(s string) (time.Duration, bool) {
		d, err := time.ParseDuration(s)
		return d, err == nil
	}
	return []durationField{
		{"spec.targets[0].release.geometricScaling.delay", "Revision", target(`"release": {"geometricScaling": {"delay": %s}}`),
			func(o client.Object) (time.Duration, bool) {
				return metaDuration(firstTarget(o).Release.GeometricScaling.Delay)
			}, "nonNegative"},
		{"spec.targets[0].release.linearScaling.delay", "Revision", target(`"release": {"linearScaling": {"delay": %s}}`),
			func(o client.Object) (time.Duration, bool) {
				return metaDuration(firstTarget(o).Release.LinearScaling.Delay)
			}, "nonNegative"},
		{"spec.targets[0].externalTest.timeout", "Revision", target(`"externalTest": {"timeout": %s}`),
			func(o client.Object) (time.Duration, bool) { return metaDuration(firstTarget(o).ExternalTest.Timeout) }, "nonNegative"},
		{"spec.targets[0].serviceLevelObjectives[0].serviceLevelIndicator.canary.failAfter", "Revision",
			target(`"serviceLevelObjectives": [{"name": "availability", "serviceLevelIndicator": {"canary": {"failAfter": %s}}}]`),
			func(o client.Object) (time.Duration, bool) {
				return parsed(firstTarget(o).ServiceLevelObjectives[0].ServiceLevelIndicator.Canary.FailAfter)
			}, "nonNegative"},
		{"spec.targets[0].ports[0].istio.http.timeout", "Revision", target(`"ports": [{"name": "http", "istio": {"http": {"timeout": %s}}}]`),
			func(o client.Object) (time.Duration, bool) { return parsed(firstTarget(o).Ports[0].Istio.HTTP.Timeout) }, "istio"},
		{"spec.targets[0].ports[0].istio.http.retries.perTryTimeout", "Revision",
			target(`"ports": [{"name": "http", "istio": {"http": {"retries": {"perTryTimeout": %s}}}}]`),
			func(o client.Object) (time.Duration, bool) {
				return parsed(firstTarget(o).Ports[0].Istio.HTTP.Retries.PerTryTimeout)
			}, "istio"},
		{"spec.targets[0].karpenterDoNotDisrupt", "Revision", target(`"karpenterDoNotDisrupt": %s`),
			func(o client.Object) (time.Duration, bool) {
				if v := firstTarget(o).KarpenterDoNotDisrupt; v != "true" {
					return parsed(v)
				}
				return 0, true
			}, "karp"},
		{"spec.httpPortFaults[0].fault.delay.fixedDelay", "FaultInjector",
			func(v string) string {
				return `{"httpPortFaults": [{"fault": {"delay": {"fixedDelay": ` + v + `, "percentage": {"value": 10}}}}]}`
			},
			func(o client.Object) (time.Duration, bool) {
				return parsed(o.(*picchuv1alpha1.FaultInjector).Spec.HTTPPortFaults[0].Fault.Delay.FixedDelay)
			}, "fault"},
	}
}

// goReadsDuration is what Picchu makes of v in a field of class: the
// duration, and whether it takes it (Go parses it and it is in range).
func goReadsDuration(class, v string) (time.Duration, bool) {
	if class == "karp" && v == "true" {
		return 0, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return d, false
	}
	if (class == "istio" || class == "fault") && d != 0 && d < time.Millisecond {
		return d, false // plan/manifests refuses routes under Istio's minimum
	}
	return d, true
}

// TestSchema_DurationsAgreeWithTheDecoder sends every duration edge case to
// every duration field of the bare API server.
func TestSchema_DurationsAgreeWithTheDecoder(t *testing.T) {
	ctx := context.Background()
	for _, f := range durationFields() {
		for _, e := range durationEdges {
			stored := map[string]bool{"nonNegative": e.nonNegative, "istio": e.istio, "karp": e.karp, "fault": e.fault}[f.class]
			t.Run(f.path+"="+e.value, func(t *testing.T) {
				want, goTakes := goReadsDuration(f.class, e.value)
				obj := object(t, f.kind, f.spec(quote(t, e.value)))
				checkAgreement(ctx, t, f.path, obj, edge{e.value, stored, e.stricter}, goTakes, func(typed client.Object) {
					got, ok := f.read(typed)
					if !ok || got != want {
						t.Errorf("%s %q stored, read back as %v (%v), want %v", f.path, e.value, got, ok, want)
					}
				})
			})
		}
	}
}

// timestampEdges are the edge cases of an RFC 3339 timestamp.
var timestampEdges = []edge{
	{"2026-11-21T10:00:00Z", true, ""},
	{"2026-11-21T10:00:00.5Z", true, ""},
	{"2026-11-21T10:00:00.123456789Z", true, ""},
	{"2026-11-21T10:00:00.1234567891234Z", true, ""},
	{"2026-11-21T10:00:00+05:30", true, ""},
	{"2026-11-21T10:00:00-23:59", true, ""},
	{"2024-02-29T23:59:59Z", true, ""},
	{"0001-01-01T00:00:01Z", true, ""},
	{"9999-12-31T23:59:59Z", true, ""},
	{"2026-02-29T00:00:00Z", false, ""},
	{"2026-11-31T00:00:00Z", false, ""},
	{"2026-11-21T24:00:00Z", false, ""},
	{"2026-11-21T10:00:60Z", false, ""},
	{"2026-11-21t10:00:00z", false, ""},
	{"2026-11-21T10:00:00x5Z", false, ""},
	{"2026-11-21T10:00:00Zt", false, ""},
	{"2026-11-21T10:00:00.Z", false, ""},
	{"2026-11-21T10:00:00", false, ""},
	{"2026-11-21 10:00:00Z", false, ""},
	{"", false, ""},
	{"2026-11-21T10:00:00,5Z", false, "RFC 3339 separates fractions with a period"},
	{"2026-11-21T1:00:00Z", false, "RFC 3339 hours have two digits"},
	{"2026-11-21T10:00:00+24:00", false, "offsets are at most 23:59"},
	{"2026-11-21T10:00:00+05:60", false, "offsets are at most 23:59"},
}

// TestSchema_TimestampsAgreeWithTheDecoder sends every timestamp edge case
// to a metav1.Time in a Revision's spec and to a Timestamp in a
// ReleaseManager's status.
func TestSchema_TimestampsAgreeWithTheDecoder(t *testing.T) {
	ctx := context.Background()
	for _, e := range timestampEdges {
		t.Run("spec.targets[0].externalTest.lastUpdated="+e.value, func(t *testing.T) {
			var want metav1.Time
			goTakes := json.Unmarshal([]byte(quote(t, e.value)), &want) == nil
			obj := object(t, "Revision", revisionJSON(`"externalTest": {"lastUpdated": `+quote(t, e.value)+`}`))
			checkAgreement(ctx, t, "spec.targets[0].externalTest.lastUpdated", obj, e, goTakes, func(typed client.Object) {
				got := typed.(*picchuv1alpha1.Revision).Spec.Targets[0].ExternalTest.LastUpdated
				if got == nil || !got.Equal(&want) {
					t.Errorf("%q stored, read back as %v, want %v", e.value, got, want)
				}
			})
		})
		t.Run("status.revisions[0].state.lastUpdated="+e.value, func(t *testing.T) {
			var want picchuv1alpha1.Timestamp
			goTakes := json.Unmarshal([]byte(quote(t, e.value)), &want) == nil
			rm := object(t, "ReleaseManager", `{"app": "demo", "target": "production", "fleet": "production"}`)
			if err := create(ctx, bare.Delivery.Client, rm); err != nil {
				t.Fatal(err)
			}
			rev := map[string]any{"tag": "v1", "currentPercent": int64(0), "peakPercent": int64(0), "releaseEligible": false,
				"state": map[string]any{"current": "created", "target": "deployed", "lastUpdated": e.value}}
			if err := unstructured.SetNestedSlice(rm.Object, []any{rev}, "status", "revisions"); err != nil {
				t.Fatal(err)
			}
			err := bare.Delivery.Client.Status().Update(ctx, rm)
			checkWrite(t, "status.revisions[0].state.lastUpdated", e, goTakes, err)
			if err != nil || !goTakes {
				return
			}
			typed := &picchuv1alpha1.ReleaseManager{}
			if err := bare.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(rm), typed); err != nil {
				t.Fatalf("reading the stored release manager: %v", err)
			}
			if err := typed.DecodeError(); err != nil {
				t.Fatalf("stored but does not decode: %v", err)
			}
			if got := typed.Status.Revisions[0].State.LastUpdated; got == nil || !got.Equal(want.Time) {
				t.Errorf("%q stored, read back as %v, want %v", e.value, got, want.Time)
			}
		})
	}
}

// TestSchema_NumbersAgreeWithTheDecoder sends integers at the edges of
// their Go types, int-or-strings and quantities.
func TestSchema_NumbersAgreeWithTheDecoder(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		path   string
		fields string // target fields, %s is the value
		edges  []edge
		read   func(picchuv1alpha1.RevisionTarget) string
	}{
		{"spec.targets[0].scale.max", `"scale": {"max": %s}`,
			[]edge{{"2147483647", true, ""}, {"2147483648", false, ""}, {"-1", false, "the field's minimum is 0"}},
			func(t picchuv1alpha1.RevisionTarget) string { return fmt.Sprint(t.Scale.Max) }},
		{"spec.targets[0].canary.ttl", `"canary": {"ttl": %s}`,
			[]edge{{"9223372036854775807", true, ""}, {"9223372036854775808", false, ""}},
			func(t picchuv1alpha1.RevisionTarget) string { return fmt.Sprint(t.Canary.TTL) }},
		{"spec.targets[0].podDisruptionBudget.maxUnavailable", `"podDisruptionBudget": {"maxUnavailable": %s}`,
			[]edge{{"2147483647", true, ""}, {"-2147483648", true, ""}, {`"10%"`, true, ""}, {`"2147483648"`, true, ""},
				{"2147483648", false, ""}, {"-2147483649", false, ""}},
			func(t picchuv1alpha1.RevisionTarget) string { return t.PodDisruptionBudget.MaxUnavailable.String() }},
		{"spec.targets[0].podDisruptionBudget.minAvailable", `"podDisruptionBudget": {"minAvailable": %s}`,
			[]edge{{"2147483647", true, ""}, {"4294967296", false, ""}},
			func(t picchuv1alpha1.RevisionTarget) string { return t.PodDisruptionBudget.MinAvailable.String() }},
		{"spec.targets[0].resources.limits", `"resources": {"limits": {"cpu": %s}}`,
			[]edge{{`"500m"`, true, ""}, {`"1e3"`, true, ""}, {`"1E-3"`, true, ""}, {`"2Gi"`, true, ""}, {`".5"`, true, ""},
				{`"+1"`, true, ""}, {"1", true, ""}, {`"1Gb"`, false, ""}, {`"1e"`, false, ""}},
			func(t picchuv1alpha1.RevisionTarget) string { q := t.Resources.Limits["cpu"]; return q.String() }},
	}
	for _, tt := range tests {
		for _, e := range tt.edges {
			t.Run(tt.path+"="+e.value, func(t *testing.T) {
				var target picchuv1alpha1.RevisionTarget
				goTakes := json.Unmarshal([]byte(`{`+fmt.Sprintf(tt.fields, e.value)+`}`), &target) == nil
				obj := exactObject(t, "Revision", revisionJSON(fmt.Sprintf(tt.fields, e.value)))
				checkAgreement(ctx, t, tt.path, obj, e, goTakes, func(typed client.Object) {
					if got, want := tt.read(typed.(*picchuv1alpha1.Revision).Spec.Targets[0]), tt.read(target); got != want {
						t.Errorf("%s stored, read back as %s, want %s", e.value, got, want)
					}
				})
			})
		}
	}
}

// checkAgreement creates obj in the bare API server and checks the
// verdict: stored as e says, and then read back through the scheme's
// decoder whole (check sees the typed object); rejected naming the field,
// and then Go rejects it too unless e says why the schema is stricter.
func checkAgreement(ctx context.Context, t *testing.T, path string, obj *unstructured.Unstructured, e edge, goTakes bool, check func(client.Object)) {
	t.Helper()
	err := create(ctx, bare.Delivery.Client, obj)
	checkWrite(t, path, e, goTakes, err)
	if err != nil || !goTakes {
		return
	}
	var typed client.Object = &picchuv1alpha1.Revision{}
	if obj.GetKind() == "FaultInjector" {
		typed = &picchuv1alpha1.FaultInjector{}
	}
	if err := bare.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(obj), typed); err != nil {
		t.Fatalf("reading the stored object: %v", err)
	}
	if rev, ok := typed.(*picchuv1alpha1.Revision); ok && rev.DecodeError() != nil {
		t.Fatalf("stored but does not decode: %v", rev.DecodeError())
	}
	check(typed)
}

// checkWrite checks the API server's answer to a write of e against e and
// against the Go decoder's verdict.
func checkWrite(t *testing.T, path string, e edge, goTakes bool, err error) {
	t.Helper()
	switch {
	case err != nil && !apierrors.IsInvalid(err):
		t.Fatalf("writing %s=%q: %v", path, e.value, err)
	case err == nil && !e.stored:
		t.Errorf("the schema admits %s=%q; want it rejected (Go decodes it: %v)", path, e.value, goTakes)
	case err == nil && !goTakes:
		t.Errorf("the schema admits %s=%q, which the Go decoder rejects", path, e.value)
	case err != nil && e.stored:
		t.Errorf("the schema rejects %s=%q: %v", path, e.value, err)
	case err != nil && !strings.Contains(err.Error(), path):
		t.Errorf("rejection of %q does not name %s: %v", e.value, path, err)
	case err != nil && !strings.Contains(err.Error(), " must ") && !strings.Contains(err.Error(), " should ") &&
		!strings.Contains(err.Error(), "Too long"):
		t.Errorf("rejection of %s=%q does not say what the field must be: %v", path, e.value, err)
	case err != nil && goTakes && e.stricter == "":
		t.Errorf("the schema rejects %s=%q, which the Go decoder takes: %v", path, e.value, err)
	case err != nil && !goTakes && e.stricter != "":
		t.Errorf("%s=%q: the Go decoder rejects it too, so the schema is not stricter (%s)", path, e.value, e.stricter)
	}
}

// exactObject is object with integers sent as integers, not float64s.
func exactObject(t *testing.T, kind, specJSON string) *unstructured.Unstructured {
	t.Helper()
	u := object(t, kind, `{}`)
	var spec map[string]any
	if err := utiljson.Unmarshal([]byte(specJSON), &spec); err != nil {
		t.Fatalf("bad test spec %s: %v", specJSON, err)
	}
	u.Object["spec"] = spec
	return u
}

// quote is v as a JSON string.
func quote(t *testing.T, v string) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSchema_QuantityGapIsReported covers the one mismatch left: the
// quantity pattern Kubernetes generates for resource.Quantity (in the
// containers' resources, volume sizes and divisors embedded from
// k8s.io/api) admits exponents that are not whole numbers or overflow 64
// bits, which resource.ParseQuantity rejects. A CEL isQuantity rule there
// exceeds the CRD's cost budget (those strings and maps are unbounded), so
// the schema stores them; the decoder must then report the value on the
// Revision, not fail; and the validating webhook, when it runs, rejects it
// naming the value.
func TestSchema_QuantityGapIsReported(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{"1e1.5", "1e.5", "1e9223372036854775808"} {
		t.Run(q, func(t *testing.T) {
			obj := object(t, "Revision", revisionJSON(`"resources": {"limits": {"cpu": `+quote(t, q)+`}}`))
			if err := create(ctx, bare.Delivery.Client, obj); err != nil {
				t.Skipf("the schema now rejects %q, closing the gap: %v", q, err)
			}
			rev := &picchuv1alpha1.Revision{}
			if err := bare.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(obj), rev); err != nil {
				t.Fatalf("reading the stored revision: %v", err)
			}
			err := rev.DecodeError()
			if err == nil || !strings.Contains(err.Error(), "spec.targets[0].resources.limits[cpu]: ") {
				t.Errorf("decode error %v does not name spec.targets[0].resources.limits[cpu]", err)
			}
			obj = object(t, "Revision", revisionJSON(`"resources": {"limits": {"cpu": `+quote(t, q)+`}}`))
			err = create(ctx, hookedClient, obj)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targets[0].resources.limits[cpu]: Invalid value: ") {
				t.Errorf("the webhook did not reject it naming spec.targets[0].resources.limits[cpu]: %v", err)
			}
		})
	}
}
