package v1alpha1

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// storedRevision is a Revision as the API server returns it, with target
// fields set from extra.
func storedRevision(name, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return `{"apiVersion": "picchu.medium.engineering/v1alpha1", "kind": "Revision",
		"metadata": {"name": "` + name + `", "namespace": "picchu", "uid": "u-` + name + `"},
		"spec": {"app": {"name": "demo", "tag": "` + name + `", "image": "demo:` + name + `"},
			"targets": [{"name": "production", "fleet": "production"` + extra + `}]},
		"status": {"summary": "production=released 100%"}}`
}

// listOf is a RevisionList holding items, as a List call returns it.
func listOf(items ...string) []byte {
	return []byte(`{"apiVersion": "picchu.medium.engineering/v1alpha1", "kind": "RevisionList",
		"metadata": {"resourceVersion": "7"}, "items": [` + strings.Join(items, ",") + `]}`)
}

// codec decodes as the informers do: the scheme's deserializer.
func codec(t testing.TB) runtime.Decoder {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}

// TestRevision_UndecodableSpecIsReportedNotFatal lists a good Revision and
// one whose stored values the Go types cannot hold, through the decoder the
// informers use: the list decodes, the good one whole, and the bad one with
// its metadata, a zero spec and a DecodeError naming the value.
func TestRevision_UndecodableSpecIsReportedNotFatal(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		field string
		why   string
	}{
		{"overflowing duration", `"release": {"geometricScaling": {"delay": "2562048h"}}`,
			"spec.targets[0].release.geometricScaling.delay", `invalid duration "2562048h"`},
		{"int-or-string out of int32", `"podDisruptionBudget": {"maxUnavailable": 3000000000}`,
			"spec.targets[0].podDisruptionBudget.maxUnavailable", "int32"},
		{"quantity with a fractional exponent", `"resources": {"limits": {"cpu": "1e1.5"}}`,
			"spec.targets[0].resources.limits[cpu]", "quantities must match"},
		{"timestamp Go does not read", `"externalTest": {"lastUpdated": "2026-11-21t10:00:00z"}`,
			"spec.targets[0].externalTest.lastUpdated", "parsing time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, _, err := codec(t).Decode(listOf(storedRevision("good", ""), storedRevision("bad", tt.extra)), nil, nil)
			if err != nil {
				t.Fatalf("list did not decode: %v", err)
			}
			list := obj.(*RevisionList)
			if len(list.Items) != 2 {
				t.Fatalf("decoded %d items, want 2", len(list.Items))
			}
			good, bad := &list.Items[0], &list.Items[1]
			if err := good.DecodeError(); err != nil || good.Spec.App.Tag != "good" || good.Status.Summary == "" {
				t.Errorf("good revision decoded as %+v, %v", good.Spec.App, err)
			}
			err = bad.DecodeError()
			if err == nil {
				t.Fatalf("bad revision has no decode error; spec %+v", bad.Spec)
			}
			if !errors.Is(err, ErrUndecodable) || !strings.Contains(err.Error(), tt.field+": ") || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("decode error %q does not name %s and say %q", err, tt.field, tt.why)
			}
			if bad.Name != "bad" || bad.Namespace != "picchu" || bad.UID != "u-bad" || bad.Kind != "Revision" {
				t.Errorf("bad revision's identity lost: %s/%s %s %s", bad.Namespace, bad.Name, bad.UID, bad.Kind)
			}
			if bad.Spec.App.Name != "" || len(bad.Spec.Targets) != 0 {
				t.Errorf("bad revision's spec is not zero: %+v", bad.Spec)
			}
			if bad.Status.Summary == "" {
				t.Errorf("bad revision's status, which decodes, was dropped")
			}
			if err := bad.DeepCopy().DecodeError(); err == nil {
				t.Errorf("a deep copy (what the cache hands out) lost the decode error")
			}
		})
	}
}

// TestRevision_UndecodableSpecIsWrittenBackAsStored checks that encoding a
// Revision whose spec did not decode writes the stored spec, not a zero one.
func TestRevision_UndecodableSpecIsWrittenBackAsStored(t *testing.T) {
	var rev Revision
	if err := json.Unmarshal([]byte(storedRevision("bad", `"release": {"linearScaling": {"delay": "9999999999999999999ns"}}`)), &rev); err != nil {
		t.Fatal(err)
	}
	if rev.DecodeError() == nil {
		t.Fatal("no decode error")
	}
	rev.Labels = map[string]string{"changed": "yes"}
	b, err := json.Marshal(&rev)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			App     map[string]string `json:"app"`
			Targets []struct {
				Release struct {
					LinearScaling struct {
						Delay string `json:"delay"`
					} `json:"linearScaling"`
				} `json:"release"`
			} `json:"targets"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.App["tag"] != "bad" || len(back.Spec.Targets) != 1 || back.Spec.Targets[0].Release.LinearScaling.Delay != "9999999999999999999ns" {
		t.Errorf("spec not written back as stored: %s", b)
	}
	if back.Metadata.Labels["changed"] != "yes" {
		t.Errorf("metadata change lost: %s", b)
	}

	// A Revision that decodes is encoded as always, and decoding a good
	// Revision into one that was bad clears the error.
	if err := json.Unmarshal([]byte(storedRevision("good", "")), &rev); err != nil || rev.DecodeError() != nil {
		t.Fatalf("good revision into a bad one: %v, %v", err, rev.DecodeError())
	}
	b, err = json.Marshal(&rev)
	if err != nil || !strings.Contains(string(b), `"tag":"good"`) {
		t.Errorf("good revision encoded as %s (%v)", b, err)
	}
}

// TestRevision_UndecodableStatusKeepsTheSpec checks that a status the Go
// types cannot hold is reported and left zero, and the spec still decodes.
func TestRevision_UndecodableStatusKeepsTheSpec(t *testing.T) {
	var rev Revision
	stored := strings.Replace(storedRevision("v1", ""), `"status": {"summary": "production=released 100%"}`,
		`"status": {"targets": [{"name": "production", "scale": {"current": 4294967296}}]}`, 1)
	if err := json.Unmarshal([]byte(stored), &rev); err != nil {
		t.Fatal(err)
	}
	err := rev.DecodeError()
	if err == nil || !strings.Contains(err.Error(), "status.targets[0].scale.current: ") {
		t.Errorf("decode error %v does not name status.targets[0].scale.current", err)
	}
	if rev.Spec.App.Tag != "v1" || len(rev.Spec.Targets) != 1 || len(rev.Status.Targets) != 0 {
		t.Errorf("decoded spec %+v, status %+v", rev.Spec, rev.Status)
	}
}

// TestReleaseManager_UndecodableStatusIsReported checks a ReleaseManager
// whose release record holds a timestamp Go cannot read.
func TestReleaseManager_UndecodableStatusIsReported(t *testing.T) {
	stored := `{"apiVersion": "picchu.medium.engineering/v1alpha1", "kind": "ReleaseManager",
		"metadata": {"name": "demo-production", "namespace": "picchu"},
		"spec": {"app": "demo", "target": "production", "fleet": "production"},
		"status": {"revisions": [{"tag": "v1", "currentPercent": 100, "peakPercent": 100, "releaseEligible": true,
			"state": {"current": "released", "target": "released", "lastUpdated": "2026-11-21T10:00:00,5+01:00x"}}]}}`
	var rm ReleaseManager
	if err := json.Unmarshal([]byte(stored), &rm); err != nil {
		t.Fatal(err)
	}
	err := rm.DecodeError()
	if err == nil || !strings.Contains(err.Error(), "status.revisions[0].state.lastUpdated: ") {
		t.Errorf("decode error %v does not name status.revisions[0].state.lastUpdated", err)
	}
	if rm.Spec.App != "demo" || len(rm.Status.Revisions) != 0 {
		t.Errorf("decoded spec %+v, status %+v", rm.Spec, rm.Status)
	}
	good := strings.Replace(stored, "2026-11-21T10:00:00,5+01:00x", "2026-11-21T10:00:00.5+01:00", 1)
	if err := json.Unmarshal([]byte(good), &rm); err != nil || rm.DecodeError() != nil {
		t.Fatalf("good release manager: %v, %v", err, rm.DecodeError())
	}
	want := time.Date(2026, 11, 21, 9, 0, 0, 5e8, time.UTC)
	if got := rm.Status.Revisions[0].State.LastUpdated; got == nil || !got.Equal(want) {
		t.Errorf("lastUpdated = %v, want %v", got, want)
	}
}

// TestRevision_NotAnObjectIsAnError checks that only data that is no
// object at all fails to decode.
func TestRevision_NotAnObjectIsAnError(t *testing.T) {
	for _, data := range []string{`[]`, `"revision"`, `{"metadata": {"name": 5}}`} {
		var rev Revision
		if err := json.Unmarshal([]byte(data), &rev); err == nil {
			t.Errorf("%s decoded into a Revision", data)
		}
	}
}
