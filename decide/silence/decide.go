package silence

import (
	"slices"
	"time"
)

// Input is what the silences of an app in a target are decided from.
type Input struct {
	// Now is the time of the decision.
	Now time.Time
	// Namespace, App and Target name the app in the target.
	Namespace, App, Target string
	// Instance names the Picchu instance deciding: it holds only silences
	// whose marker names it, and adopts those whose marker names none
	// (Owns). Empty, it holds only silences whose marker names none.
	Instance string
	// Fleet is the clusters of the target's fleet: every silence is kept
	// to their alerts (Fleet.Matcher).
	Fleet Fleet
	// Builds are the app's builds in the target.
	Builds []Build
	// Existing are the silences Picchu created for the app in the target
	// that it knows of (others are left alone), expired ones included.
	Existing []Silence
	// Margin is DefaultMargin when 0.
	Margin time.Duration
	// MaxLength bounds how far ahead of Now a silence ends:
	// DefaultMaxLength when 0, two margins when less.
	MaxLength time.Duration
}

// Plan is what to do in Alertmanager.
type Plan struct {
	// Create are the silences to create.
	Create []Silence
	// Extend are the silences to change: a later end, and the matchers
	// and comment the Revision asks for now (Alertmanager replaces a
	// silence whose matchers change with a new one).
	Extend []Silence
	// Expire are the silences to expire.
	Expire []Silence
	// Recheck is when a silence held will need extending if the release
	// has not moved on by then (zero when none is held): decide again then.
	Recheck time.Time
}

// Empty says the plan asks for nothing in Alertmanager.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Extend)+len(p.Expire) == 0 }

// Decide says which silences to create, extend and expire for the builds
// of in.App in in.Target.
//
//   - A build being released (Silenced) holds one silence per releaseSilences
//     entry, scoped to the app's namespace in the target and the fleet's
//     clusters (Matchers), ending
//     two margins after its release is expected to end (a retiring build's:
//     when the newest releasing build's is, at least now), and never more
//     than MaxLength after now.
//   - One that would end less than a margin after that (or, for a release
//     longer than MaxLength, less than half MaxLength from now), whose
//     matchers or comment the Revision changed, or that ends further ahead
//     than MaxLength (a silence written by hand, or by an older Picchu), is
//     rewritten to that end.
//   - Every other silence of the app in the target that is not expired is
//     expired: its build's release ended (released, failed, failing,
//     retired without traffic, deleted), the build is gone, or the Revision
//     no longer asks for it; so are duplicates of a silence held (the one
//     ending last is kept).
//
// Only silences in.Instance owns (Owns) are considered: another instance's
// are never changed or expired.
func Decide(in Input) Plan {
	b := boundsOf(in)
	wanted, order := wantedSilences(in)
	held, expire := heldSilences(in, wanted)
	plan := Plan{Expire: expire}
	for _, k := range order {
		s, ok := held[k]
		plan.hold(wanted[k], s, ok, in.Now, b)
	}
	return plan
}

// bounds are how far ahead of a decision silences end.
type bounds struct {
	margin, maxLength time.Duration
}

// boundsOf is in's margin and bound on a silence's length, defaults
// filled in.
func boundsOf(in Input) bounds {
	margin := in.Margin
	if margin <= 0 {
		margin = DefaultMargin
	}
	maxLength := in.MaxLength
	if maxLength <= 0 {
		maxLength = DefaultMaxLength
	}
	// A bound under two margins would renew a silence at every decision.
	return bounds{margin: margin, maxLength: max(maxLength, 2*margin)}
}

// lead is how long before its end a silence held through a release
// expected to end in remaining is renewed: a margin after the release is
// expected to end, or half the bound for a release longer than it.
func (b bounds) lead(remaining time.Duration) time.Duration {
	return min(remaining+b.margin, b.maxLength/2)
}

// length is how long a silence held through a release expected to end in
// remaining lasts from now on: two margins after it, within the bound.
func (b bounds) length(remaining time.Duration) time.Duration {
	return min(remaining+2*b.margin, b.maxLength)
}

// wantedSilence is a silence a build asks for, and how long its release
// is expected to go on.
type wantedSilence struct {
	Silence
	remaining time.Duration
}

// wantedSilences are the silences in's builds being released ask for, by
// key, and their keys in the order the builds and their releaseSilences
// come in.
func wantedSilences(in Input) (map[Key]wantedSilence, []Key) {
	ramping := releasing(in.Builds)
	wanted := map[Key]wantedSilence{}
	var order []Key
	for _, b := range in.Builds {
		if !Silenced(b.State, b.Percent) {
			continue
		}
		remaining := max(b.Remaining, 0)
		if b.State.IsRetiring() {
			remaining = ramping
		}
		for i, s := range b.Silences {
			k := Key{Namespace: in.Namespace, App: in.App, Target: in.Target, Tag: b.Tag, Index: i}
			if _, dup := wanted[k]; dup {
				continue
			}
			wanted[k] = wantedSilence{Silence: Silence{Key: k, Matchers: Matchers(k, s, in.Fleet), Comment: Comment(k, in.Instance, s), Instance: in.Instance}, remaining: remaining}
			order = append(order, k)
		}
	}
	return wanted, order
}

// releasing is how long the release of the build releasing the longest
// is expected to go on; 0 when none is releasing.
func releasing(builds []Build) time.Duration {
	ramping := time.Duration(0)
	for _, b := range builds {
		if b.State.IsRamping() {
			ramping = max(ramping, b.Remaining)
		}
	}
	return ramping
}

// heldSilences splits the live silences of in's app and target that
// in.Instance holds into those it keeps, the one ending last for each
// wanted key, and those to expire: the ones no build wants, and the
// duplicates.
func heldSilences(in Input, wanted map[Key]wantedSilence) (map[Key]Silence, []Silence) {
	var live []Silence
	for _, s := range in.Existing {
		if !s.Expired && Owns(in.Instance, s.Instance) && s.Key.Namespace == in.Namespace && s.Key.App == in.App && s.Key.Target == in.Target {
			live = append(live, s)
		}
	}
	slices.SortStableFunc(live, func(a, b Silence) int { return b.EndsAt.Compare(a.EndsAt) })
	held := map[Key]Silence{}
	var expire []Silence
	for _, s := range live {
		if _, ok := wanted[s.Key]; !ok {
			expire = append(expire, s)
			continue
		}
		if _, kept := held[s.Key]; kept {
			expire = append(expire, s)
			continue
		}
		held[s.Key] = s
	}
	return held, expire
}

// hold adds to p what holds w's silence, s when ok, the one held now,
// until w's release is expected to end: it is created when none is held,
// and rewritten when it would end too soon or past the bound, or its
// matchers or comment changed. It brings p.Recheck forward to when the
// silence will need renewing.
func (p *Plan) hold(w wantedSilence, s Silence, ok bool, now time.Time, b bounds) {
	limit := now.Add(b.maxLength)
	lead := b.lead(w.remaining)
	until := now.Add(b.length(w.remaining))
	end := s.EndsAt
	switch {
	case !ok:
		w.StartsAt, w.EndsAt = now, until
		p.Create = append(p.Create, w.Silence)
		end = until
	case s.EndsAt.Before(now.Add(lead)) || s.EndsAt.After(limit) || !sameMatchers(s.Matchers, w.Matchers) || s.Comment != w.Comment:
		// Never shortened, but to the bound.
		w.ID, w.StartsAt, w.EndsAt = s.ID, s.StartsAt, until
		if s.EndsAt.After(until) && !s.EndsAt.After(limit) {
			w.EndsAt = s.EndsAt
		}
		p.Extend = append(p.Extend, w.Silence)
		end = w.EndsAt
	}
	if at := end.Add(-lead); p.Recheck.IsZero() || at.Before(p.Recheck) {
		p.Recheck = at
	}
}
