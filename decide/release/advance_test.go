package release

import (
	"slices"
	"testing"
	"time"
)

func TestAdvance(t *testing.T) {
	ready := Facts{Now: t0, State: Deployed, Since: t0.Add(-time.Second), RevisionExists: true, Deployment: IsDeployed,
		Eligible: true, Window: Window{Open: true}}
	with := func(change func(*Facts)) Facts {
		f := ready
		change(&f)
		return f
	}
	opens := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		f    Facts
		may  func(State) bool
		want Step
		pass []State
	}{
		{"a deployed build whose window is open is released in the same tick",
			ready, nil,
			Step{State: Releasing, Action: Sync}, []State{PendingRelease}},
		{"outside its window it waits in pendingrelease, until the window opens",
			with(func(f *Facts) { f.Window = Window{Opens: opens} }), nil,
			Step{State: PendingRelease, Action: Sync, Due: opens}, nil},
		{"a state the caller refuses is not entered: the tick stops before it",
			ready, func(s State) bool { return s != Releasing },
			Step{State: PendingRelease, Action: Sync}, nil},
		{"a paused build waits in pendingrelease",
			with(func(f *Facts) { f.Control.Paused = true }), nil,
			Step{State: PendingRelease, Action: Sync}, nil},
		{"a frozen build stays deployed until the freeze ends",
			with(func(f *Facts) { f.Frozen, f.FrozenUntil = true, opens }), nil,
			Step{State: Deployed, Action: Sync, Due: opens}, nil},
		{"a canary that ended passes, waits for nothing and is released",
			with(func(f *Facts) {
				f.State, f.Since, f.Canary = Canarying, t0.Add(-time.Minute), Canary{Percent: 10, TTL: time.Second, Start: t0.Add(-time.Minute)}
			}), nil,
			Step{State: Releasing, Action: Sync}, []State{Canaried, PendingRelease}},
		{"a canary whose alerts fire does not pass",
			with(func(f *Facts) {
				f.State, f.Since, f.Verdict = Canarying, t0.Add(-time.Minute), Firing
				f.Canary = Canary{Percent: 10, TTL: time.Second, Start: t0.Add(-time.Minute)}
			}), nil,
			Step{State: Canarying, Action: Sync}, nil},
		{"a build in pendingrelease takes its one step",
			with(func(f *Facts) { f.State = PendingRelease }), nil,
			Step{State: Releasing, Action: Sync}, nil},
		{"a deployed build with a canary goes to it, and no further",
			with(func(f *Facts) { f.Canary = Canary{Percent: 10, TTL: time.Minute, HasSLOs: true} }), nil,
			Step{State: Canarying, Action: Sync}, nil},
		{"a deploy that finishes is recorded first: nothing passes with a Then",
			with(func(f *Facts) { f.State = Deploying }), nil,
			Step{State: Deploying, Action: Sync, Then: Deployed}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, passed := Advance(tc.f, DefaultTimeouts, tc.may)
			if got != tc.want || !slices.Equal(passed, tc.pass) {
				t.Fatalf("Advance = %+v passing %v, want %+v passing %v", got, passed, tc.want, tc.pass)
			}
		})
	}
}

// FuzzAdvance checks Advance against Next: each state it passes is one
// Next enters from the state before, at the same time, and only waits; it
// ends where Next goes from the last of them; it never enters a state the
// caller refuses; and without a pass-through state it is Next.
func FuzzAdvance(f *testing.F) {
	f.Add("deployed", uint16(0x0083), int32(0), int64(60))
	f.Add("canarying", uint16(0x00c3), int32(10), int64(1))
	f.Add("tested", uint16(0x0002), int32(0), int64(0))
	f.Fuzz(func(t *testing.T, state string, flags uint16, percent int32, ttl int64) {
		bit := func(n uint) bool { return flags&(1<<n) != 0 }
		facts := Facts{
			Now: t0, State: State(state), Since: t0.Add(-time.Duration(ttl) * time.Second), RevisionExists: !bit(9),
			Deployment: Deployment(flags>>10) % 3, Percent: percent, Failed: bit(0), Eligible: bit(1),
			Test:    ExternalTest{Enabled: bit(2), Completed: bit(3), Succeeded: bit(4)},
			Canary:  Canary{Percent: percent, TTL: time.Duration(ttl) * time.Second, HasSLOs: bit(5), Start: t0.Add(-time.Minute)},
			Window:  Window{Open: bit(7), Opens: t0.Add(time.Hour)},
			Control: Control{Paused: bit(8), Promote: bit(12)},
			Frozen:  bit(13), Verdict: Verdict(flags>>14) % 4,
		}
		refused := State("")
		if bit(6) {
			refused = Releasing
		}
		may := func(s State) bool { return s != refused }
		got, passed := Advance(facts, DefaultTimeouts, may)
		if first := Next(facts, DefaultTimeouts); len(passed) == 0 && (got.State != first.State || got.Action != first.Action || got.Then != first.Then) {
			t.Fatalf("Advance = %+v passing nothing, Next = %+v", got, first)
		}
		g := facts
		for _, p := range passed {
			if next := Next(g, DefaultTimeouts); next.State != p || !passThrough[p] || !passable(next) {
				t.Fatalf("passed %s, where Next from %s goes to %+v (facts %+v)", p, g.State, next, facts)
			}
			g.State, g.Since = p, facts.Now
		}
		if last := Next(g, DefaultTimeouts); last.State != got.State || !may(got.State) {
			t.Fatalf("ended in %s, where Next from %s goes to %s (may: %v)", got.State, g.State, last.State, may(got.State))
		}
	})
}
