package mirror

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper answers RESTMapping as its mapper does, or with err, and
// counts the questions.
type countingMapper struct {
	meta.RESTMapper
	err   error
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	if m.err != nil {
		return nil, m.err
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func TestKinds(t *testing.T) {
	start := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	serving := meta.NewDefaultRESTMapper(nil)
	serving.Add(ExternalSecretKind, meta.RESTScopeNamespace)
	for _, tc := range []struct {
		name string
		// the mapper of each question, asked at start + after
		mappers []*countingMapper
		after   []time.Duration
		want    []bool
		asked   int
		err     bool
	}{
		{
			name:    "a yes is kept",
			mappers: []*countingMapper{{RESTMapper: serving}, {RESTMapper: serving}},
			after:   []time.Duration{0, time.Hour},
			want:    []bool{true, true}, asked: 1,
		},
		{
			name:    "a no is kept for the recheck period, then asked again",
			mappers: []*countingMapper{{RESTMapper: meta.NewDefaultRESTMapper(nil)}, {RESTMapper: serving}, {RESTMapper: serving}},
			after:   []time.Duration{0, 29 * time.Second, 30 * time.Second},
			want:    []bool{false, false, true}, asked: 2,
		},
		{
			name:    "a failed question is an error and nothing is remembered",
			mappers: []*countingMapper{{RESTMapper: serving, err: errors.New("connection refused")}, {RESTMapper: serving}},
			after:   []time.Duration{0, time.Second},
			want:    []bool{false, true}, asked: 2, err: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k kinds
			asked := 0
			for i, m := range tc.mappers {
				got, err := k.served("picchu/dr", m, ExternalSecretKind, 30*time.Second, start.Add(tc.after[i]))
				if (err != nil) != (tc.err && i == 0) {
					t.Errorf("question %d: error %v", i, err)
				}
				if got != tc.want[i] {
					t.Errorf("question %d: served %v, want %v", i, got, tc.want[i])
				}
				asked += m.asked
			}
			if asked != tc.asked {
				t.Errorf("asked the cluster %d times, want %d", asked, tc.asked)
			}
		})
	}

	var k kinds
	if _, err := k.served("picchu/dr", &countingMapper{RESTMapper: serving}, ExternalSecretKind, time.Minute, start); err != nil {
		t.Fatal(err)
	}
	k.notServed("picchu/dr", ExternalSecretKind, start)
	if served, ok := k.known("picchu/dr", ExternalSecretKind); !ok || served {
		t.Errorf("after a refusal: known %v, %v", served, ok)
	}
	k.forget("picchu/dr")
	if _, ok := k.known("picchu/dr", ExternalSecretKind); ok {
		t.Error("remembered after forget")
	}
}
