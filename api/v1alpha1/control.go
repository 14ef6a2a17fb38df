package v1alpha1

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxControlSkew is how far ahead of the clock that reads it the time of a
// promote or rollback request may be: the validating webhook refuses a
// request further ahead of its clock, and Picchu ignores a rollback whose
// time is further ahead of its own (a fast clock, or a hand-written time,
// would otherwise hold back every build created until then).
const MaxControlSkew = time.Minute

// Promotion modes of the promote annotation (AnnotationPromote).
const (
	// PromoteNext ends the canary, starts a release waiting on its
	// schedule, or takes the next step now.
	PromoteNext = "next"
	// PromoteFull does what PromoteNext does, then ramps straight to release.max.
	PromoteFull = "full"
)

// PromoteRequest is the promote annotation's value for a request made at:
// "<mode>@<RFC 3339 time>".
func PromoteRequest(full bool, at time.Time) string {
	mode := PromoteNext
	if full {
		mode = PromoteFull
	}
	return mode + "@" + at.UTC().Format(time.RFC3339Nano)
}

// ParsePromoteRequest reads a promote annotation's mode: whether it asks
// for a full promotion, and whether it is a request at all (a mode Picchu
// knows, with or without "@<time>").
func ParsePromoteRequest(v string) (full, ok bool) {
	mode, _, _ := strings.Cut(v, "@")
	switch mode {
	case PromoteNext:
		return false, true
	case PromoteFull:
		return true, true
	}
	return false, false
}

// ParsePromoteTime reads when a promote annotation's request was made: the
// time after "@", false when there is none or it is not an RFC 3339 time.
func ParsePromoteTime(v string) (time.Time, bool) {
	_, at, ok := strings.Cut(v, "@")
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	return t, err == nil
}

// RollbackRequest is the rollback annotation's value for a request made at.
func RollbackRequest(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }

// ParseRollbackRequest reads when a rollback annotation's request was made.
func ParseRollbackRequest(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}

// controlAnnotations are the annotations a person steers a release with.
var controlAnnotations = []string{AnnotationPause, AnnotationPromote, AnnotationRollback, AnnotationFailedReason}

// StampControlBy names user in AnnotationControlBy when the request changes
// the Revision's control (old is nil on creation): a control annotation or
// spec.failed. A request that changes neither keeps the name that was
// there, so nobody can rewrite who made the last change.
func (r *Revision) StampControlBy(old *Revision, user string) {
	var before map[string]string
	var failedBefore bool
	if old != nil {
		before, failedBefore = old.Annotations, old.Spec.Failed
	}
	changed := r.Spec.Failed != failedBefore
	for _, k := range controlAnnotations {
		v, ok := r.Annotations[k]
		w, was := before[k]
		changed = changed || ok != was || v != w
	}
	if changed && user != "" {
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[AnnotationControlBy] = user
		return
	}
	if by, ok := before[AnnotationControlBy]; ok {
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[AnnotationControlBy] = by
	} else if old != nil {
		delete(r.Annotations, AnnotationControlBy)
	}
}

// StampRollbackAt sets AnnotationRollbackAt to at, the time the request is
// received, when it sets or changes the rollback annotation (old is nil on
// creation), removes it when there is no rollback, and otherwise keeps what
// old had (none for a request made before requests were stamped), so
// nobody can move a request's time without making a new one.
func (r *Revision) StampRollbackAt(old *Revision, at time.Time) {
	var before map[string]string
	if old != nil {
		before = old.Annotations
	}
	request, ok := r.Annotations[AnnotationRollback]
	stamp, stamped := before[AnnotationRollbackAt]
	was, had := before[AnnotationRollback]
	switch {
	case !ok:
		delete(r.Annotations, AnnotationRollbackAt)
	case old == nil || !had || request != was:
		r.Annotations[AnnotationRollbackAt] = at.UTC().Format(time.RFC3339Nano)
	case stamped:
		r.Annotations[AnnotationRollbackAt] = stamp
	default:
		// A request made before requests were stamped keeps its own time:
		// stamping it now would move it past every build created since.
		delete(r.Annotations, AnnotationRollbackAt)
	}
}

// ValidateControl checks the promote and rollback requests a change sets
// or changes (old is nil on creation) against now, the clock of the
// webhook: a rollback must be an RFC 3339 time, a promote's time (after
// "@") too, and neither may be more than MaxControlSkew ahead of now. A
// request the change leaves as it was is not checked again.
func (r *Revision) ValidateControl(old *Revision, now time.Time) field.ErrorList {
	var before map[string]string
	if old != nil {
		before = old.Annotations
	}
	annotations := field.NewPath("metadata", "annotations")
	var errs field.ErrorList
	check := func(key string, parse func(string) (time.Time, bool), what string) {
		v, ok := r.Annotations[key]
		if w, was := before[key]; !ok || (was && w == v) {
			return
		}
		at, ok := parse(v)
		switch {
		case !ok:
			errs = append(errs, field.Invalid(annotations.Key(key), v, what))
		case at.After(now.Add(MaxControlSkew)):
			errs = append(errs, field.Invalid(annotations.Key(key), v, fmt.Sprintf(
				"the request's time is %s ahead of Picchu's clock (at most %s is allowed): is the clock that wrote it fast? "+
					"Picchu orders requests by the time it receives them", at.Sub(now).Round(time.Second), MaxControlSkew)))
		}
	}
	check(AnnotationRollback, ParseRollbackRequest, "not an RFC 3339 time, such as 2026-11-02T10:00:00Z")
	if v := r.Annotations[AnnotationPromote]; strings.Contains(v, "@") {
		check(AnnotationPromote, ParsePromoteTime, `not "next@<time>" or "full@<time>" with an RFC 3339 time`)
	}
	return errs
}
