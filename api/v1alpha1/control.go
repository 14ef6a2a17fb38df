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
