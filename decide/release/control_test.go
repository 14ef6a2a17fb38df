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
		// With traffic, a leaving build waits for it to move; eligible
		// again (recommissioned, rolled back to), it ramps again; failed,
		// it is rolled back.
		Retiring: {Releasing, Releasing, Releasing, Releasing, Failing, Retiring},
		// Retried while it serves, it is released again, or retires
		// when out of release.
		Failing: {Releasing, Releasing, Releasing, Releasing, Failing, Retiring},
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

// TestDecideRollback decides an app's rollback from v3 (the bad build,
// applied 5 minutes before now), v2 and v1, as requests come from clocks
// right, slow and fast, stamped when received or not.
func TestDecideRollback(t *testing.T) {
	now := t0
	tags := []string{"v3", "v2", "v1"}
	// Newest first.
	created := []time.Time{now.Add(-5 * time.Minute), now.Add(-time.Hour), now.Add(-2 * time.Hour)}
	said := func(d time.Duration) RollbackRequest {
		return RollbackRequest{Request: now.Add(d).Format(time.RFC3339Nano), Said: now.Add(d)}
	}
	received := func(r RollbackRequest, d time.Duration) RollbackRequest { r.Received = now.Add(d); return r }
	acted := func(r RollbackRequest) RollbackRequest { r.Acted = true; return r }
	const year = 365 * 24 * time.Hour
	for _, tc := range []struct {
		name     string
		requests map[string]RollbackRequest
		// want is "to <tag>, superseding <tags>" or "none", then each
		// request newly ignored, "<tag> ignored: <start of why>".
		want []string
	}{
		{"none", nil, []string{"none"}},
		{"to v1 now: v3 and v2 retire", map[string]RollbackRequest{"v1": said(0)}, []string{"to v1, superseding v3 v2"}},
		{"to v2 now: v3 retires", map[string]RollbackRequest{"v2": said(0)}, []string{"to v2, superseding v3"}},
		{
			"from a clock 10 minutes slow, received now: rolls back",
			map[string]RollbackRequest{"v2": received(said(-10*time.Minute), 0)},
			[]string{"to v2, superseding v3"},
		},
		{
			"from a clock 10 minutes slow, not stamped: ignored, it rolls nothing back",
			map[string]RollbackRequest{"v2": said(-10 * time.Minute)},
			[]string{"none", "v2 ignored: no newer build was created before its time, 2026-11-02T09:50:00Z (written by the client's clock)"},
		},
		{
			"to the newest build: ignored, it rolls nothing back",
			map[string]RollbackRequest{"v3": said(0)},
			[]string{"none", "v3 ignored: no newer build was created before its time"},
		},
		{
			"a year ahead, not stamped: ignored, holds back no build",
			map[string]RollbackRequest{"v1": said(year)},
			[]string{"none", "v1 ignored: its time, 2027-11-02T10:00:00Z (written by the client's clock), is 8760h0m0s ahead of Picchu's clock"},
		},
		{
			"a stamp a year ahead (written by hand, without the webhook): ignored",
			map[string]RollbackRequest{"v1": received(said(0), year)},
			[]string{"none", "v1 ignored: its time, 2027-11-02T10:00:00Z (received), is 8760h0m0s ahead"},
		},
		{"a fast clock within the skew", map[string]RollbackRequest{"v1": said(time.Minute)}, []string{"to v1, superseding v3 v2"}},
		{
			"ordered by when received: v2's, received last, wins over v1's, which says later",
			map[string]RollbackRequest{"v1": received(said(0), -time.Minute), "v2": received(said(-30*time.Minute), 0)},
			[]string{"to v2, superseding v3"},
		},
		{
			"ignored before: stays ignored once its time has come",
			map[string]RollbackRequest{"v1": func() RollbackRequest { r := said(-time.Hour); r.Ignored = true; return r }()},
			[]string{"none"},
		},
		{
			"a request ignored gives way to the one before",
			map[string]RollbackRequest{"v1": acted(said(-3 * time.Minute)), "v2": said(year)},
			[]string{"to v1, superseding v3 v2", "v2 ignored: its time"},
		},
		{
			"acted on before, it stands though it supersedes nothing now",
			map[string]RollbackRequest{"v3": acted(said(-time.Minute))},
			[]string{"to v3, superseding"},
		},
		{
			"a failed build's request is refused",
			map[string]RollbackRequest{"v1": func() RollbackRequest { r := said(0); r.Refused = true; return r }()},
			[]string{"none"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requests := make([]RollbackRequest, len(tags))
			for i, tag := range tags {
				requests[i] = tc.requests[tag]
			}
			d := DecideRollback(created, requests, now, time.Minute)
			got := []string{"none"}
			if d.Target >= 0 {
				var sup []string
				for i, s := range d.Superseded {
					if s {
						sup = append(sup, tags[i])
					}
				}
				got = []string{strings.TrimSpace("to " + tags[d.Target] + ", superseding " + strings.Join(sup, " "))}
			}
			for i, why := range d.Ignored {
				if why != "" {
					got = append(got, tags[i]+" ignored: "+why)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("decided %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("decided %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// FuzzDecideRollback: whatever the builds and requests, the rollback names
// a build whose request may be taken (not refused, not ignored before or
// now, not ahead of the clock unless acted on), it supersedes only builds
// ordered newer than that one and created no later than its time, and a
// new request it takes supersedes at least one.
func FuzzDecideRollback(f *testing.F) {
	f.Add([]byte{}, int64(0))
	f.Add([]byte{0, 10, 0, 0, 1, 20, 30, 1, 2, 40, 250, 0}, int64(1_800_000_000))
	f.Add([]byte{5, 5, 5, 7, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8}, int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, unix int64) {
		now := time.Unix(unix, 0)
		// Each build takes 3 bytes: its age in minutes, its request's offset
		// from now in minutes (signed), and flags.
		var created []time.Time
		var requests []RollbackRequest
		for i := 0; i+2 < len(data) && len(created) < 32; i += 3 {
			created = append(created, now.Add(-time.Duration(data[i])*time.Minute))
			flags := data[i+2]
			if flags&1 == 0 {
				requests = append(requests, RollbackRequest{})
				continue
			}
			at := now.Add(time.Duration(int8(data[i+1])) * time.Minute)
			r := RollbackRequest{Request: at.String(), Said: at, Refused: flags&2 != 0, Acted: flags&4 != 0, Ignored: flags&8 != 0}
			if flags&16 != 0 {
				r.Received = at.Add(time.Duration(int8(flags)) * time.Second)
			}
			requests = append(requests, r)
		}
		d := DecideRollback(created, requests, now, time.Minute)
		if len(d.Superseded) != len(created) || len(d.Ignored) != len(requests) {
			t.Fatalf("answers for %d builds: %d superseded, %d ignored", len(created), len(d.Superseded), len(d.Ignored))
		}
		if d.Target < 0 {
			if slices.Contains(d.Superseded, true) {
				t.Fatalf("no rollback, yet builds superseded: %v", d.Superseded)
			}
			return
		}
		r := requests[d.Target]
		if r.Request == "" || r.Refused || r.Ignored || d.Ignored[d.Target] != "" || (!r.Acted && r.Time().After(now.Add(time.Minute))) {
			t.Fatalf("rolls back to build %d, whose request %+v may not be taken", d.Target, r)
		}
		some := false
		for i, s := range d.Superseded {
			if s && (i >= d.Target || created[i].After(d.At)) {
				t.Fatalf("supersedes build %d (created %v), for a rollback to %d at %v", i, created[i], d.Target, d.At)
			}
			some = some || s
		}
		if !r.Acted && !some {
			t.Fatalf("takes a new request to build %d that supersedes nothing", d.Target)
		}
	})
}
