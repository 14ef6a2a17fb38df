package release

import (
	"slices"
	"time"
)

// KeepRetired is how many of the newest retired builds of a target garbage
// collection always keeps, so that there is something to roll back to.
const KeepRetired = 3

// DefaultKeepDone is how many builds of a target that are done with
// (retired, failed, deleting, deleted) garbage collection keeps at most by
// default, expired or not: past the newest keepDone, a done build is
// collectable whatever its TTL, so that a ttl of 0 (never expires) or a long
// one cannot grow the Revisions of an app, and the ReleaseManager's
// status.revisions that records them, without bound.
const DefaultKeepDone = 20

// GCCandidate is a build of a target as garbage collection sees it.
type GCCandidate struct {
	// State is the build's current state in the target.
	State State
	// Created is the Revision's creation time (zero if unknown).
	Created time.Time
	// TTL is how long after Created the build may be collected; zero or
	// less means it never expires.
	TTL time.Duration
}

// Collectable says, for builds given newest first, which may be deleted.
//
// The newest KeepRetired builds in state retired are always kept. Any other
// build that is retired, failed, deleting or deleted is collectable when it
// has expired (see expired) or when keepDone newer builds are done too. If
// that would collect every build, the newest is spared. The result has one
// entry per build; an empty input gives an empty result.
func Collectable(builds []GCCandidate, now time.Time, keepDone int) []bool {
	out := make([]bool, len(builds))
	retired, done := 0, 0
	all := len(builds) > 0
	for i, b := range builds {
		if collectableState(b.State) {
			done++
		}
		if b.State == Retired {
			retired++
			if retired <= KeepRetired {
				all = false
				continue
			}
		}
		out[i] = collectableState(b.State) && (b.expired(now) || done > keepDone)
		all = all && out[i]
	}
	if all {
		out[0] = false
	}
	return out
}

// collectableState says whether a build in state s is done with, so that
// garbage collection may take it once it has expired.
func collectableState(s State) bool {
	switch s {
	case Retired, Failed, Deleting, Deleted:
		return true
	}
	return false
}

// expired says whether the build's time to live has run out at now: its
// creation time plus its TTL is not after now. A build with an unknown
// creation time or no positive TTL never expires.
func (b GCCandidate) expired(now time.Time) bool {
	if b.Created.IsZero() || b.TTL <= 0 {
		return false
	}
	return !b.Created.Add(b.TTL).After(now)
}

// NextCollection is when garbage collection next has more to collect of
// builds (given newest first, as Collectable takes them) as they stand:
// the earliest expiry after now that makes a build collectable that is not
// at now. ok is false when no such time comes: only a change of the builds
// (a new one, a state reached) would make more collectable. A
// ReleaseManager runs again then, so that an expired build goes without
// waiting for anything else to happen to its app.
func NextCollection(builds []GCCandidate, now time.Time, keepDone int) (next time.Time, ok bool) {
	var expiries []time.Time
	for _, b := range builds {
		if collectableState(b.State) && !b.Created.IsZero() && b.TTL > 0 && b.Created.Add(b.TTL).After(now) {
			expiries = append(expiries, b.Created.Add(b.TTL))
		}
	}
	slices.SortFunc(expiries, time.Time.Compare)
	before := Collectable(builds, now, keepDone)
	for _, at := range expiries {
		for i, c := range Collectable(builds, at, keepDone) {
			if c && !before[i] {
				return at, true
			}
		}
	}
	return time.Time{}, false
}
