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
		{"a deploy that finishes goes on to its release in the same tick, unfinished until the deploy is done",
			with(func(f *Facts) { f.State = Deploying }), nil,
			Step{State: Releasing, Action: Sync, Unfinished: Deploying}, []State{Deployed, PendingRelease}},
		{"a deploy that finishes outside the window waits in pendingrelease, unfinished until the deploy is done",
			with(func(f *Facts) { f.State, f.Window = Deploying, Window{Opens: opens} }), nil,
			Step{State: PendingRelease, Action: Sync, Due: opens, Unfinished: Deploying}, []State{Deployed}},
		{"a deploy that finishes into a canary goes to it, and no further",
			with(func(f *Facts) {
				f.State, f.Canary = Deploying, Canary{Percent: 10, TTL: time.Minute, HasSLOs: true}
			}), nil,
			Step{State: Canarying, Action: Sync, Unfinished: Deploying}, []State{Deployed}},
		{"a deploy that finishes stops before a state the caller refuses: deployed once it is done",
			with(func(f *Facts) { f.State = Deploying }), func(s State) bool { return !s.IsJudged() },
			Step{State: Deploying, Action: Sync, Then: Deployed}, nil},
		{"a deploy that finishes in a freeze is deployed once it is done, and waits there",
			with(func(f *Facts) { f.State, f.Frozen, f.FrozenUntil = Deploying, true, opens }), nil,
			Step{State: Deploying, Action: Sync, Then: Deployed}, nil},
		{"a deploy that finishes for a build not eligible is deployed once it is done, and waits for its TTL there",
			with(func(f *Facts) { f.State, f.Eligible, f.TTL, f.Created = Deploying, false, time.Hour, t0 }), nil,
			Step{State: Deploying, Action: Sync, Then: Deployed}, nil},
		{"a deploy that has not finished goes nowhere",
			with(func(f *Facts) { f.State, f.Deployment = Deploying, NotDeployed }), nil,
			Step{State: Deploying, Action: Sync, Due: t0.Add(-time.Second).Add(DefaultTimeouts.Deploying)}, nil},
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
	f.Add("deploying", uint16(0x0882), int32(0), int64(5))
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
		for i, p := range passed {
			next := Next(g, DefaultTimeouts)
			finished := i == 0 && p == Deployed && finishesDeploy(g, next)
			if !finished && (next.State != p || !passThrough[p] || !passable(next)) {
				t.Fatalf("passed %s, where Next from %s goes to %+v (facts %+v)", p, g.State, next, facts)
			}
			g.State, g.Since = p, facts.Now
		}
		if last := Next(g, DefaultTimeouts); last.State != got.State || !may(got.State) {
			t.Fatalf("ended in %s, where Next from %s goes to %s (may: %v)", got.State, g.State, last.State, may(got.State))
		}
		// A finished deploy passed on is unfinished until the deploy is
		// done; nothing else is.
		if deployed := len(passed) > 0 && passed[0] == Deployed && facts.State == Deploying; (got.Unfinished == Deploying) != deployed ||
			(!deployed && got.Unfinished != "") {
			t.Fatalf("Advance = %+v passing %v from %s: unfinished %q", got, passed, facts.State, got.Unfinished)
		}
	})
}

// TestAfterTraffic: a build whose ramp reaches its maximum this tick is
// released once the clusters take it, and the build it took the last
// traffic from leaves; any other step stays as it is.
func TestAfterTraffic(t *testing.T) {
	ramping := Facts{Now: t0, State: Releasing, Since: t0.Add(-time.Minute), RevisionExists: true, Deployment: IsDeployed,
		Eligible: true, Percent: 50, PeakPercent: 50}
	released := Facts{Now: t0, State: Released, Since: t0.Add(-time.Hour), RevisionExists: true, Deployment: IsDeployed,
		Eligible: true, Percent: 50, PeakPercent: 100}
	with := func(f Facts, change func(*Facts)) Facts {
		change(&f)
		return f
	}
	sync := func(s State) Step { return Step{State: s, Action: Sync} }
	for _, tc := range []struct {
		name     string
		f        Facts
		step     Step
		peak     int32
		eligible bool
		want     Step
	}{
		{"a ramp that reaches 100 % is released once the clusters take it",
			ramping, sync(Releasing), 100, true, Step{State: Releasing, Action: Sync, Then: Released}},
		{"a ramp that reaches its max is released once the clusters take it",
			with(ramping, func(f *Facts) { f.MaxPercent = 80 }), sync(Releasing), 80, true, Step{State: Releasing, Action: Sync, Then: Released}},
		{"a first build that passes into its release at 100 % is released with it",
			with(ramping, func(f *Facts) { f.State, f.Percent, f.PeakPercent = Deployed, 0, 0 }), sync(Releasing), 100, true,
			Step{State: Releasing, Action: Sync, Then: Released}},
		{"a ramp short of its max goes on",
			ramping, sync(Releasing), 75, true, sync(Releasing)},
		{"a ramp whose waves are not done goes on",
			with(ramping, func(f *Facts) { f.WavesLeft = true }), sync(Releasing), 100, true, sync(Releasing)},
		{"the build that lost its last traffic leaves now, retired once the clusters route it nothing",
			released, sync(Released), 0, false, Step{State: Retiring, Action: Sync, Then: Retired}},
		{"a failed build that lost its traffic fails, as before",
			with(released, func(f *Facts) { f.Failed = true }), sync(Failing), 0, false, sync(Failing)},
		{"nothing new: the step stays",
			released, sync(Released), 0, true, sync(Released)},
		{"a step with a Then stays",
			with(ramping, func(f *Facts) { f.State = Deploying }), Step{State: Deploying, Action: Sync, Then: Deployed}, 100, false,
			Step{State: Deploying, Action: Sync, Then: Deployed}},
		{"a build that retires stays retiring",
			with(released, func(f *Facts) { f.State, f.Eligible, f.Percent = Retiring, false, 0 }), Step{State: Retiring, Action: Retire, Then: Retired}, 0, false,
			Step{State: Retiring, Action: Retire, Then: Retired}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AfterTraffic(tc.f, DefaultTimeouts, tc.step, tc.peak, tc.eligible); got != tc.want {
				t.Fatalf("AfterTraffic = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzAfterTraffic checks AfterTraffic against Next: the step it returns
// is the one given, or the given one released once taken, where Next from
// the new peak goes to released, or where Next goes from the step's state
// without eligibility; and what it returns only moves the build on.
func FuzzAfterTraffic(f *testing.F) {
	f.Add("releasing", uint16(0x0003), int32(50), int32(100))
	f.Add("released", uint16(0x0001), int32(100), int32(0))
	f.Fuzz(func(t *testing.T, state string, flags uint16, recorded, peak int32) {
		bit := func(n uint) bool { return flags&(1<<n) != 0 }
		facts := Facts{
			Now: t0, State: State(state), Since: t0.Add(-time.Minute), RevisionExists: !bit(9),
			Deployment: Deployment(flags>>10) % 3, Percent: recorded, PeakPercent: recorded, Failed: bit(2), Eligible: bit(0),
			MaxPercent: int32(flags>>4) % 101, WavesLeft: bit(3), Window: Window{Open: bit(7)}, Control: Control{Paused: bit(8)},
		}
		step, _ := Advance(facts, DefaultTimeouts, nil)
		eligible := facts.Eligible && bit(1)
		got := AfterTraffic(facts, DefaultTimeouts, step, peak, eligible)
		if got == step {
			return
		}
		if !passable(step) {
			t.Fatalf("a step %+v that does more than Sync became %+v", step, got)
		}
		g := facts
		if step.State != facts.State {
			g.State, g.Since = step.State, facts.Now
		}
		g.PeakPercent, g.Eligible = max(facts.PeakPercent, peak), eligible
		next := Next(g, DefaultTimeouts)
		switch {
		case got.Then.IsRetired():
			// It leaves, and the next tick, from retiring with no
			// traffic, would retire it.
			h := g
			h.State, h.Since, h.Percent = Retiring, facts.Now, 0
			if gone := Next(h, DefaultTimeouts); eligible || next.State != Retiring || got.State != Retiring || got.Action != Sync ||
				gone != (Step{State: Retiring, Action: Retire, Then: Retired}) {
				t.Fatalf("%+v became %+v, where Next without eligibility goes to %+v and from there with no traffic to %+v", step, got, next, gone)
			}
		case got.Then != "":
			if got.State != step.State || got.Then != next.State || !got.Then.IsReleased() {
				t.Fatalf("%+v became %+v, where Next from the new peak goes to %+v", step, got, next)
			}
		case got != next || eligible:
			t.Fatalf("%+v became %+v, where Next without eligibility goes to %+v", step, got, next)
		}
	})
}
