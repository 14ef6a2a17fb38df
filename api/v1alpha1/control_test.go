package v1alpha1

import (
	"testing"
	"time"
)

func TestPromoteRequest(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 5, time.UTC)
	for _, full := range []bool{false, true} {
		v := PromoteRequest(full, at)
		if got, ok := ParsePromoteRequest(v); !ok || got != full {
			t.Errorf("ParsePromoteRequest(%q) = %t, %t; want %t, true", v, got, ok, full)
		}
	}
	for _, v := range []string{"", "later", "@" + at.Format(time.RFC3339)} {
		if _, ok := ParsePromoteRequest(v); ok {
			t.Errorf("ParsePromoteRequest(%q) is a request", v)
		}
	}
	if got, ok := ParseRollbackRequest(RollbackRequest(at)); !ok || !got.Equal(at) {
		t.Errorf("rollback request at %v read as %v, %t", at, got, ok)
	}
	if _, ok := ParseRollbackRequest("yes"); ok {
		t.Error(`rollback request "yes" read as a time`)
	}
}

func TestStampControlBy(t *testing.T) {
	rev := func(failed bool, annotations ...string) *Revision {
		r := &Revision{}
		r.Spec.Failed = failed
		for i := 0; i+1 < len(annotations); i += 2 {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[annotations[i]] = annotations[i+1]
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		old, new *Revision
		want     string // "" for no annotation
	}{
		{"a pause names who", rev(false), rev(false, AnnotationPause, "x"), "bob"},
		{"a resume names who", rev(false, AnnotationPause, "x", AnnotationControlBy, "alice"), rev(false, AnnotationControlBy, "alice"), "bob"},
		{"an abort names who", rev(false), rev(true, AnnotationFailedReason, "aborted: x"), "bob"},
		{"a retry names who", rev(true, AnnotationControlBy, "alice"), rev(false, AnnotationControlBy, "alice"), "bob"},
		{"a new promote request names who", rev(false, AnnotationPromote, "next@1"), rev(false, AnnotationPromote, "next@2"), "bob"},
		{"a rollback names who", rev(false), rev(false, AnnotationRollback, "t"), "bob"},
		{"another change keeps who", rev(false, AnnotationPause, "x", AnnotationControlBy, "alice"), rev(false, AnnotationPause, "x", "team", "a"), "alice"},
		{"nobody can rewrite who", rev(false, AnnotationControlBy, "alice"), rev(false, AnnotationControlBy, "mallory"), "alice"},
		{"nor claim to be who", rev(false), rev(false, AnnotationControlBy, "mallory"), ""},
		{"a new Revision failed by its manifest names who", nil, rev(true), "bob"},
		{"a new Revision keeps what it says", nil, rev(false, AnnotationControlBy, "ci"), "ci"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.new.StampControlBy(tc.old, "bob")
			if got := tc.new.Annotations[AnnotationControlBy]; got != tc.want {
				t.Errorf("control-by %q, want %q", got, tc.want)
			}
		})
	}
}
