package v1alpha1

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzRevisionAdmission feeds arbitrary Revision specs to the webhook's
// defaulting and validation: they must never panic, defaulting must be
// idempotent, and a rejection must name a field.
func FuzzRevisionAdmission(f *testing.F) {
	for _, seed := range []string{
		`{"app":{"name":"a","tag":"t","image":"i"},"targets":[{"name":"p","fleet":"f"}]}`,
		`{"targets":[{"ports":[{"name":"a","mode":"public"},{"name":"b","default":true}]}]}`,
		`{"targets":[{"ports":[{"name":"http"},{"name":"http","ingresses":["public"]}],"defaultIngressPorts":{"public":"nope"}}]}`,
		`{"targets":[{"scale":{"min":5,"max":1},"canary":{"percent":200},"release":{"max":-3}}]}`,
		`{"targets":[{"configSelector":{"matchExpressions":[{"key":"","operator":"In"}]},"serviceLevelObjectives":[{"enabled":true},{"enabled":true}]}]}`,
		`{"targets":[{"ports":[{"mode":"weird","ingresses":["x","y"]}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &Revision{}
		if err := json.Unmarshal(data, &r.Spec); err != nil {
			return
		}
		r.DefaultRouting()
		once := r.DeepCopy()
		r.DefaultRouting()
		if !reflect.DeepEqual(once, r) {
			t.Fatalf("DefaultRouting is not idempotent on %s", data)
		}
		if _, err := r.Validate(); err != nil && len(err.Error()) == 0 {
			t.Fatalf("empty rejection message for %s", data)
		}
	})
}
