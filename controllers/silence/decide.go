package silence

import (
	"slices"
	"time"

	"github.com/medium/picchu/controllers/release"
)

// Input is what the silences of an app in a target are decided from.
type Input struct {
	// Now is the time of the decision.
	Now time.Time
	// Namespace, App and Target name the app in the target.
	Namespace, App, Target string
	// Builds are the app's builds in the target.
	Builds []Build
	// Existing are the silences Picchu created for the app in the target
	// that it knows of (others are left alone), expired ones included.
	Existing []Silence
	// Margin is DefaultMargin when 0.
	Margin time.Duration
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
//     entry, ending two margins after its release is expected to end (a
//     retiring build's: when the newest releasing build's is, at least now).
//   - One that would end less than a margin after that, or whose matchers
//     or comment the Revision changed, is extended to that end.
//   - Every other silence of the app in the target that is not expired is
//     expired: its build's release ended (released, failed, failing,
//     retired without traffic, deleted), the build is gone, or the Revision
//     no longer asks for it; so are duplicates of a silence held (the one
//     ending last is kept).
func Decide(in Input) Plan {
	margin := in.Margin
	if margin <= 0 {
		margin = DefaultMargin
	}
	ramping := time.Duration(0)
	for _, b := range in.Builds {
		if b.State == release.Releasing {
			ramping = max(ramping, b.Remaining)
		}
	}
	type want struct {
		Silence
		remaining time.Duration
	}
	wanted := map[Key]want{}
	var order []Key
	for _, b := range in.Builds {
		if !Silenced(b.State, b.Percent) {
			continue
		}
		remaining := max(b.Remaining, 0)
		if b.State == release.Retiring {
			remaining = ramping
		}
		for i, s := range b.Silences {
			k := Key{Namespace: in.Namespace, App: in.App, Target: in.Target, Tag: b.Tag, Index: i}
			if _, dup := wanted[k]; dup {
				continue
			}
			wanted[k] = want{Silence: Silence{Key: k, Matchers: Matchers(s), Comment: Comment(k, s)}, remaining: remaining}
			order = append(order, k)
		}
	}

	// The live silences of this app and target, the one ending last first
	// for each key.
	var live []Silence
	for _, s := range in.Existing {
		if !s.Expired && s.Key.Namespace == in.Namespace && s.Key.App == in.App && s.Key.Target == in.Target {
			live = append(live, s)
		}
	}
	slices.SortStableFunc(live, func(a, b Silence) int { return b.EndsAt.Compare(a.EndsAt) })
	held := map[Key]Silence{}
	var plan Plan
	for _, s := range live {
		if _, ok := wanted[s.Key]; !ok {
			plan.Expire = append(plan.Expire, s)
			continue
		}
		if _, kept := held[s.Key]; kept {
			plan.Expire = append(plan.Expire, s)
			continue
		}
		held[s.Key] = s
	}

	recheck := func(endsAt time.Time, remaining time.Duration) {
		at := endsAt.Add(-remaining - margin)
		if plan.Recheck.IsZero() || at.Before(plan.Recheck) {
			plan.Recheck = at
		}
	}
	for _, k := range order {
		w := wanted[k]
		until := in.Now.Add(w.remaining + 2*margin)
		s, ok := held[k]
		switch {
		case !ok:
			w.StartsAt, w.EndsAt = in.Now, until
			plan.Create = append(plan.Create, w.Silence)
			recheck(until, w.remaining)
		case s.EndsAt.Before(in.Now.Add(w.remaining+margin)) || !sameMatchers(s.Matchers, w.Matchers) || s.Comment != w.Comment:
			w.ID, w.StartsAt, w.EndsAt = s.ID, s.StartsAt, until
			if s.EndsAt.After(until) {
				w.EndsAt = s.EndsAt
			}
			plan.Extend = append(plan.Extend, w.Silence)
			recheck(w.EndsAt, w.remaining)
		default:
			recheck(s.EndsAt, w.remaining)
		}
	}
	return plan
}
