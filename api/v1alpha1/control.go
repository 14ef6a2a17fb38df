package v1alpha1

import (
	"strings"
	"time"
)

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
