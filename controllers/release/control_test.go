package release

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// controlBase are the facts of a build in state s that has canaried for a
// minute of its ten, waits on a closed schedule window, takes 10 % and is
// eligible and deployed: where a person's control could change what
// happens next.
func controlBase(s State) Facts {
	return Facts{
		Now: t0, State: s, Since: t0.Add(-time.Minute), RevisionExists: true, Eligible: true,
		Created: t0.Add(-time.Hour), Deployment: IsDeployed, Percent: 10, PeakPercent: 10,
		Canary: Canary{Percent: 10, TTL: 10 * time.Minute, HasSLOs: true, Start: t0.Add(-time.Minute)},
		Window: Window{Opens: t0.Add(time.Hour)},
	}
}

// controlActions are what a person can ask, as the facts they change. A
// retry is "none" on a failed build: it sets spec.failed back to false.
var controlActions = []struct {
	name string
	set  func(*Facts)
}{
	{"none", func(*Facts) {}},
	{"pause", func(f *Facts) { f.Control.Paused = true }},
	{"promote", func(f *Facts) { f.Control.Promote = true }},
	{"pause+promote", func(f *Facts) { f.Control.Paused, f.Control.Promote = true, true }},
	{"abort", func(f *Facts) { f.Failed = true }},
	{"superseded", func(f *Facts) { f.Eligible = false }},
}

// TestNext_Controls decides every state under every control: the state the
// build is in after the tick.
func TestNext_Controls(t *testing.T) {
	// Columns: none, pause, promote, pause+promote, abort, superseded (a
	// rollback to an earlier build took it out of release).
	want := map[State][6]State{
		Created:   {Deploying, Deploying, Deploying, Deploying, Deploying, Deploying},
		Deploying: {Deploying, Deploying, Deploying, Deploying, Failing, Deploying},
		// Deployed and tested builds start their canary; a promote request
		// waits for it and ends it (below). A superseded build waits for its TTL.
		Deployed:    {Canarying, Canarying, Canarying, Canarying, Failing, Deployed},
		PendingTest: {Deployed, Deployed, Deployed, Deployed, Failing, Deployed}, // its test was turned off
		Testing:     {Deployed, Deployed, Deployed, Deployed, Failing, Deployed},
		Tested:      {Canarying, Canarying, Canarying, Canarying, Failing, Tested},
		// A pause stops the canary's timer; a promotion ends it, paused or not.
		Canarying: {Canarying, Canarying, Canaried, Canaried, Failing, Retiring},
		Canaried:  {PendingRelease, PendingRelease, PendingRelease, PendingRelease, Failing, Retiring},
		// The schedule's window is closed: a promotion starts the release anyway.
		PendingRelease: {PendingRelease, PendingRelease, Releasing, Releasing, Failing, Retiring},
		// Pause and promote act on the ramp (Ramp), not on the state.
		Releasing: {Releasing, Releasing, Releasing, Releasing, Failing, Retiring},
		Released:  {Released, Released, Released, Released, Failing, Retiring},
		// With traffic, a leaving build waits for it to move.
		Retiring: {Retiring, Retiring, Retiring, Retiring, Retiring, Retiring},
		Failing:  {Failing, Failing, Failing, Failing, Failing, Failing},
		// Eligible again (recommissioned, or rolled back to): it deploys.
		Retired: {Deploying, Deploying, Deploying, Deploying, Failing, Retired},
		// spec.failed set back to false is a retry: it deploys again.
		Failed:    {Deploying, Deploying, Deploying, Deploying, Failed, Deploying},
		Deleting:  {Deploying, Deploying, Deploying, Deploying, Deploying, Deploying},
		Deleted:   {Deploying, Deploying, Deploying, Deploying, Deploying, Deploying},
		TimingOut: {TimingOut, TimingOut, TimingOut, TimingOut, Failing, TimingOut},
	}
	var got strings.Builder
	states := States()
	slices.Sort(states)
	for _, s := range states {
		var row [6]State
		for i, a := range controlActions {
			f := controlBase(s)
			a.set(&f)
			row[i] = Next(f, DefaultTimeouts).State
		}
		fmt.Fprintf(&got, "\t\t%-15s {%s},\n", s.goName()+":", strings.Join(goNames(row[:]), ", "))
		if w, ok := want[s]; !ok || w != row {
			t.Errorf("%s: got %v, want %v", s, row, w)
		}
	}
	if t.Failed() {
		t.Logf("got:\n%s", got.String())
	}
}

func (s State) goName() string {
	for _, n := range []string{"Created", "Deploying", "Deployed", "PendingTest", "Testing", "Tested", "Canarying", "Canaried",
		"PendingRelease", "Releasing", "Released", "Retiring", "Retired", "Failing", "Failed", "Deleting", "Deleted", "TimingOut"} {
		if strings.EqualFold(n, string(s)) {
			return n
		}
	}
	return string(s)
}

func goNames(ss []State) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.goName()
	}
	return out
}

func TestPromotable(t *testing.T) {
	for _, s := range States() {
		want := s == Created || s == Deploying || s == Deployed || s == PendingTest || s == Testing || s == Tested ||
			s == Canarying || s == Canaried || s == PendingRelease || s == Releasing
		if got := Promotable(s); got != want {
			t.Errorf("Promotable(%s) = %t, want %t", s, got, want)
		}
	}
}

func TestResumed(t *testing.T) {
	start, paused := t0, t0.Add(time.Minute)
	for _, tc := range []struct {
		name               string
		start, paused, now time.Time
		want               time.Time
	}{
		{"the pause does not count", start, paused, paused.Add(5 * time.Minute), start.Add(5 * time.Minute)},
		{"a canary that had not started", time.Time{}, paused, paused.Add(time.Minute), time.Time{}},
		{"paused before the canary started", paused, start, paused.Add(time.Minute), paused},
		{"no pause recorded", start, time.Time{}, paused, start},
		{"a clock that went back", start, paused, start, start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resumed(tc.start, tc.paused, tc.now); !got.Equal(tc.want) {
				t.Errorf("Resumed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSuperseded(t *testing.T) {
	at := t0
	// Newest first: v4 (applied after the rollback), v3, v2, v1.
	created := []time.Time{at.Add(time.Second), at.Add(-time.Minute), at.Add(-time.Hour), at.Add(-2 * time.Hour)}
	for _, tc := range []struct {
		name   string
		target int
		want   []bool
	}{
		{"to v1: v3 and v2 retire, v4 came after", 3, []bool{false, true, true, false}},
		{"to v2: v3 retires", 2, []bool{false, true, false, false}},
		{"to the newest: nothing", 0, []bool{false, false, false, false}},
		{"no request", -1, []bool{false, false, false, false}},
		{"out of range", 4, []bool{false, false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Superseded(created, tc.target, at); !slices.Equal(got, tc.want) {
				t.Errorf("Superseded = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLatestRequest(t *testing.T) {
	z := time.Time{}
	for _, tc := range []struct {
		in   []time.Time
		want int
	}{
		{nil, -1},
		{[]time.Time{z, z}, -1},
		{[]time.Time{z, t0}, 1},
		{[]time.Time{t0, t0.Add(time.Second), z}, 1},
		{[]time.Time{t0, t0}, 0},
	} {
		if got := LatestRequest(tc.in); got != tc.want {
			t.Errorf("LatestRequest(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestNext_Frozen: in a freeze window no canary and no release starts,
// not even on a person's promotion; what already runs goes on, and a
// failure proceeds.
func TestNext_Frozen(t *testing.T) {
	until := t0.Add(time.Hour)
	for _, tc := range []struct {
		state State
		set   func(*Facts)
		want  Step
	}{
		{Deployed, nil, Step{State: Deployed, Action: Sync, Due: until}},
		{Tested, nil, Step{State: Tested, Action: Sync, Due: until}},
		{PendingRelease, func(f *Facts) { f.Window.Open = true }, Step{State: PendingRelease, Action: Sync, Due: until}},
		{PendingRelease, func(f *Facts) { f.Control.Promote = true }, Step{State: PendingRelease, Action: Sync, Due: until}},
		{Canaried, nil, Step{State: PendingRelease, Action: Sync}},
		{Canarying, nil, Step{State: Canarying, Action: Sync, Due: t0.Add(9 * time.Minute)}},
		{Releasing, nil, Step{State: Releasing, Action: Sync}},
		{Deployed, func(f *Facts) { f.Failed = true }, Step{State: Failing, Action: Sync}},
		{Releasing, func(f *Facts) { f.Failed = true }, Step{State: Failing, Action: Sync}},
		{Retired, func(f *Facts) { f.Eligible = false; f.Percent = 0 }, Step{State: Retired, Action: Retire}},
	} {
		f := controlBase(tc.state)
		f.Frozen, f.FrozenUntil = true, until
		if tc.set != nil {
			tc.set(&f)
		}
		if got := Next(f, DefaultTimeouts); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.state, got, tc.want)
		}
	}
}

// TestNext_Preflight: while a pre-flight check fails where a build would
// start, no canary and no release starts there, not even on a person's
// promotion; a deploy that waits for room does not run out its deadline;
// what already runs goes on, and a failure, an abort or a retirement
// proceeds.
func TestNext_Preflight(t *testing.T) {
	retry := t0.Add(20 * time.Second)
	longAgo := t0.Add(-time.Hour) // past the 15-minute deploy deadline
	for _, tc := range []struct {
		name string
		st   State
		set  func(*Facts)
		want Step
	}{
		{"deployed holds its canary", Deployed, nil, Step{State: Deployed, Action: Sync, Due: retry}},
		{"tested holds its canary", Tested, nil, Step{State: Tested, Action: Sync, Due: retry}},
		{"pending release holds in its window", PendingRelease, func(f *Facts) { f.Window.Open = true }, Step{State: PendingRelease, Action: Sync, Due: retry}},
		{"pending release holds a promotion", PendingRelease, func(f *Facts) { f.Control.Promote = true }, Step{State: PendingRelease, Action: Sync, Due: retry}},
		{"a canary that runs goes on", Canarying, nil, Step{State: Canarying, Action: Sync, Due: t0.Add(9 * time.Minute)}},
		{"canaried goes on to wait for its release", Canaried, nil, Step{State: PendingRelease, Action: Sync}},
		{"releasing goes on (its ramp holds)", Releasing, nil, Step{State: Releasing, Action: Sync}},
		{"a failure proceeds", Deployed, func(f *Facts) { f.Failed = true }, Step{State: Failing, Action: Sync}},
		{"an abort mid-ramp proceeds", Releasing, func(f *Facts) { f.Failed = true }, Step{State: Failing, Action: Sync}},
		{"a build no longer eligible retires", Canaried, func(f *Facts) { f.Eligible = false }, Step{State: Retiring, Action: Sync}},
		{"a deploy waiting for room starts its clock over", Deploying, func(f *Facts) {
			f.Deployment, f.DeployHeld, f.Since = NotDeployed, true, longAgo
		}, Step{State: Deploying, Action: Sync, Due: retry, Restart: true}},
		{"a deploy with room runs out its deadline", Deploying, func(f *Facts) {
			f.Deployment, f.Since = NotDeployed, longAgo
		}, Step{State: TimingOut}},
		{"a deploy done is done, room or not", Deploying, func(f *Facts) { f.DeployHeld = true },
			Step{State: Deploying, Action: Sync, Then: Deployed}},
		{"a failed deploy fails, room or not", Deploying, func(f *Facts) { f.Deployment, f.DeployHeld, f.Failed = NotDeployed, true, true },
			Step{State: Failing, Action: Sync}},
	} {
		f := controlBase(tc.st)
		f.Preflight, f.PreflightRetry = true, retry
		if tc.set != nil {
			tc.set(&f)
		}
		if got := Next(f, DefaultTimeouts); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
