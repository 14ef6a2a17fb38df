package v1alpha1

import (
	"strings"
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

func TestStampRollbackAt(t *testing.T) {
	received := time.Date(2026, 11, 25, 10, 0, 0, 123, time.UTC)
	const stamp = "2026-11-25T10:00:00.000000123Z"
	rev := func(annotations ...string) *Revision {
		r := &Revision{}
		for i := 0; i+1 < len(annotations); i += 2 {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[annotations[i]] = annotations[i+1]
		}
		return r
	}
	const slow, earlier = "2026-11-25T09:50:00Z", "2026-11-24T08:00:00Z"
	for _, tc := range []struct {
		name     string
		old, new *Revision
		want     string // "" for no annotation
	}{
		{"a rollback is stamped when received, whatever time it says", rev(), rev(AnnotationRollback, slow), stamp},
		{"a new rollback is stamped again", rev(AnnotationRollback, earlier, AnnotationRollbackAt, earlier), rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), stamp},
		{"another change keeps the stamp", rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier, AnnotationPause, "x"), earlier},
		{"nobody can move the stamp", rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), rev(AnnotationRollback, slow, AnnotationRollbackAt, "2099-01-01T00:00:00Z"), earlier},
		{"nor remove it", rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), rev(AnnotationRollback, slow), earlier},
		{"nor stamp a request without one", rev(AnnotationRollback, slow), rev(AnnotationRollback, slow, AnnotationRollbackAt, "2099-01-01T00:00:00Z"), ""},
		{"a request made before stamps is not stamped by another change", rev(AnnotationRollback, slow), rev(AnnotationRollback, slow, AnnotationPause, "x"), ""},
		{"the stamp goes with the rollback", rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), rev(AnnotationRollbackAt, earlier), ""},
		{"no rollback, no stamp", rev(), rev(AnnotationRollbackAt, earlier), ""},
		{"a new Revision's rollback is stamped", nil, rev(AnnotationRollback, slow, AnnotationRollbackAt, earlier), stamp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.new.StampRollbackAt(tc.old, received)
			if got := tc.new.Annotations[AnnotationRollbackAt]; got != tc.want {
				t.Errorf("rollback-at %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateControl(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return RollbackRequest(now.Add(d)) }
	rev := func(key, value string) *Revision {
		r := &Revision{}
		if key != "" {
			r.Annotations = map[string]string{key: value}
		}
		return r
	}
	const rollbackPath = "metadata.annotations[picchu.medium.engineering/rollback]"
	const promotePath = "metadata.annotations[picchu.medium.engineering/promote]"
	for _, tc := range []struct {
		name     string
		old, new *Revision
		want     string // "" when accepted
	}{
		{"a rollback now", rev("", ""), rev(AnnotationRollback, at(0)), ""},
		{"a rollback from a slow clock", rev("", ""), rev(AnnotationRollback, at(-10*time.Minute)), ""},
		{"a rollback within the skew", rev("", ""), rev(AnnotationRollback, at(MaxControlSkew)), ""},
		{"a rollback a year ahead", rev("", ""), rev(AnnotationRollback, at(365*24*time.Hour)), rollbackPath + ": Invalid value: \"2027-11-25T10:00:00Z\": the request's time is 8760h0m0s ahead of Picchu's clock (at most 1m0s is allowed)"},
		{"a rollback just beyond the skew", rev("", ""), rev(AnnotationRollback, at(MaxControlSkew+time.Second)), rollbackPath + ": Invalid value"},
		{"a new Revision with a rollback ahead", nil, rev(AnnotationRollback, at(time.Hour)), rollbackPath},
		{"a rollback that is no time", rev("", ""), rev(AnnotationRollback, "yes"), rollbackPath + ": Invalid value: \"yes\": not an RFC 3339 time"},
		{"a rollback ahead, left as it was", rev(AnnotationRollback, at(time.Hour)), rev(AnnotationRollback, at(time.Hour)), ""},
		{"a promote ahead", rev("", ""), rev(AnnotationPromote, PromoteRequest(true, now.Add(time.Hour))), promotePath + ": Invalid value"},
		{"a promote now", rev("", ""), rev(AnnotationPromote, PromoteRequest(false, now)), ""},
		{"a promote without a time", rev("", ""), rev(AnnotationPromote, PromoteNext), ""},
		{"a promote with a time that is none", rev("", ""), rev(AnnotationPromote, "next@soon"), promotePath + ": Invalid value: \"next@soon\": not \"next@<time>\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.new.ValidateControl(tc.old, now)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v; want %q", got, tc.want)
			}
		})
	}
}
