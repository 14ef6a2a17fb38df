package v1alpha1

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/runtime"
)

// The schema's duration and timestamp rules, as the CRDs state them (the
// rule's duration() is Go's time.ParseDuration; the date-time format adds
// that the date exists).
var (
	schemaDuration  = regexp.MustCompile(`^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`)
	schemaTimestamp = regexp.MustCompile(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]([.][0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)
)

// schemaAdmitsDuration says whether the schema admits s in a non-negative
// duration field (min 0) or an Istio one (min 1ms, or 0).
func schemaAdmitsDuration(s string, istio bool) bool {
	if utf8.RuneCountInString(s) > 64 || !schemaDuration.MatchString(s) {
		return false
	}
	d, err := time.ParseDuration(s)
	return err == nil && d >= 0 && (!istio || d == 0 || d >= time.Millisecond)
}

// schemaAdmitsTimestamp says whether the schema admits s in a date-time field.
func schemaAdmitsTimestamp(s string) bool {
	if !schemaTimestamp.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s[:len(time.DateOnly)])
	return err == nil
}

// FuzzRevisionDecode builds stored Revisions from the fuzzer's input: an
// arbitrary JSON object as a target, and durations, a timestamp and a
// number set in it. Each goes through the decoding the informers use (the
// scheme's deserializer, on a list) and json.Unmarshal. Neither may panic
// or fail; and when the free-form part decodes on its own and the schema
// admits every value set, the Revision must decode whole, to the values Go
// parses.
//
//	go test ./api/v1alpha1 -run '^$' -fuzz FuzzRevisionDecode -fuzztime 1000000x -parallel 1
func FuzzRevisionDecode(f *testing.F) {
	for _, s := range []struct {
		target                                        string
		delay, timeout, failAfter, portTimeout, stamp string
		max                                           int64
	}{
		{`{}`, "10s", "2h", "1m", "15s", "2026-11-21T10:00:00Z", 1},
		{`{"canary": {"percent": 10, "ttl": 60}, "scale": {"min": 2}}`, "2562047h47m16.854775807s", "0", "1.5h", "0", "2026-11-21T10:00:00.123456789+05:30", 2147483647},
		{`{"release": {"max": 50}}`, "2562048h", "9223372036854775808ns", ".5s", "500us", "2026-11-21t10:00:00z", 2147483648},
		{`{"podDisruptionBudget": {"maxUnavailable": "10%"}}`, "1h1h1h", "1μs", "5.s", "1ms", "2024-02-29T23:59:59-23:59", 0},
		{`{"podDisruptionBudget": {"maxUnavailable": 3000000000}}`, "+1s", "-0s", "1e3s", "1000us", "2026-02-29T00:00:00Z", -1},
		{`{"resources": {"limits": {"cpu": "1e1.5", "memory": "64Mi"}}}`, "", "99999999999999999999ns", "0.000000001ns", "1ns", "2026-11-21T10:00:00,5Z", 3},
		{`{"ports": [{"name": "http", "port": 80}], "env": [{"name": "A", "value": "b"}]}`, "1h30m", "90s", "0s", "2m", "0000-01-01T00:00:00Z", 10},
	} {
		f.Add([]byte(s.target), s.delay, s.timeout, s.failAfter, s.portTimeout, s.stamp, s.max)
	}
	dec := codec(f)
	f.Fuzz(func(t *testing.T, target []byte, delay, timeout, failAfter, portTimeout, stamp string, max int64) {
		fields := map[string]any{}
		d := json.NewDecoder(bytes.NewReader(target))
		d.UseNumber() // numbers stay as sent, as the API server keeps them
		if d.Decode(&fields) != nil || fields == nil {
			fields = map[string]any{}
		}
		fields["name"], fields["fleet"] = "production", "production"
		free := decodeStored(t, dec, fields)

		set(fields, delay, "release", "geometricScaling", "delay")
		set(fields, timeout, "externalTest", "timeout")
		set(fields, stamp, "externalTest", "lastUpdated")
		set(fields, failAfter, "serviceLevelObjectives", "0", "serviceLevelIndicator", "canary", "failAfter")
		set(fields, portTimeout, "ports", "0", "istio", "http", "timeout")
		set(fields, json.Number(strconv.FormatInt(max, 10)), "scale", "max")
		rev := decodeStored(t, dec, fields)

		admitted := schemaAdmitsDuration(delay, false) && schemaAdmitsDuration(timeout, false) &&
			schemaAdmitsDuration(failAfter, false) && schemaAdmitsDuration(portTimeout, true) &&
			schemaAdmitsTimestamp(stamp) && max >= 0 && max <= math.MaxInt32
		if free.DecodeError() != nil || !admitted {
			return
		}
		if err := rev.DecodeError(); err != nil {
			t.Fatalf("the schema admits %s, but it does not decode: %v", mustJSON(t, fields), err)
		}
		tgt := rev.Spec.Targets[0]
		if want, _ := time.ParseDuration(delay); tgt.Release.GeometricScaling.Delay.Duration != want {
			t.Errorf("delay %q decoded as %v, want %v", delay, tgt.Release.GeometricScaling.Delay.Duration, want)
		}
		if want, _ := time.ParseDuration(timeout); tgt.ExternalTest.Timeout.Duration != want {
			t.Errorf("timeout %q decoded as %v, want %v", timeout, tgt.ExternalTest.Timeout.Duration, want)
		}
		if want, _ := time.Parse(time.RFC3339, stamp); !tgt.ExternalTest.LastUpdated.Time.Equal(want) {
			t.Errorf("lastUpdated %q decoded as %v, want %v", stamp, tgt.ExternalTest.LastUpdated, want)
		}
		if int64(tgt.Scale.Max) != max {
			t.Errorf("scale.max %d decoded as %d", max, tgt.Scale.Max)
		}

		// The same timestamp in a ReleaseManager's release record.
		var rm ReleaseManager
		rmJSON := `{"spec": {"app": "demo"}, "status": {"revisions": [{"tag": "v1", "state": {"lastUpdated": ` + mustJSON(t, stamp) + `}}]}}`
		if err := json.Unmarshal([]byte(rmJSON), &rm); err != nil || rm.DecodeError() != nil {
			t.Fatalf("the schema admits %q, but a ReleaseManager with it does not decode: %v, %v", stamp, err, rm.DecodeError())
		}
	})
}

// decodeStored wraps target in a stored Revision and decodes it as an item
// of a list with dec and on its own with json.Unmarshal: both must succeed
// and agree on whether it decoded whole.
func decodeStored(t *testing.T, dec runtime.Decoder, target map[string]any) *Revision {
	t.Helper()
	item := mustJSON(t, map[string]any{
		"apiVersion": GroupVersion.String(), "kind": "Revision",
		"metadata": map[string]any{"name": "fuzz", "namespace": "picchu"},
		"spec": map[string]any{
			"app":     map[string]any{"name": "demo", "tag": "v1", "image": "demo:v1"},
			"targets": []any{target},
		},
	})
	obj, _, err := dec.Decode(listOf(item), nil, nil)
	if err != nil {
		t.Fatalf("listing %s failed: %v", item, err)
	}
	listed := &obj.(*RevisionList).Items[0]
	var alone Revision
	if err := json.Unmarshal([]byte(item), &alone); err != nil {
		t.Fatalf("decoding %s failed: %v", item, err)
	}
	if (listed.DecodeError() == nil) != (alone.DecodeError() == nil) {
		t.Fatalf("list and json.Unmarshal disagree on %s: %v / %v", item, listed.DecodeError(), alone.DecodeError())
	}
	if listed.Name != "fuzz" || listed.Namespace != "picchu" {
		t.Fatalf("identity lost decoding %s", item)
	}
	return listed
}

// set sets value at path in m, making objects (or, for "0", one-element
// lists) of whatever is in the way.
func set(m map[string]any, value any, path ...string) {
	for i, key := range path[:len(path)-1] {
		if path[i+1] == "0" {
			list, _ := m[key].([]any)
			if len(list) == 0 {
				list = []any{map[string]any{}}
			}
			first, ok := list[0].(map[string]any)
			if !ok {
				first = map[string]any{}
				list[0] = first
			}
			if key == "ports" {
				first["name"] = "http"
			}
			m[key] = list
			set(first, value, path[i+2:]...)
			return
		}
		next, ok := m[key].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[key] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
