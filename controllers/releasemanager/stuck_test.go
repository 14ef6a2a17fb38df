package releasemanager

import (
	"testing"
	"time"

	"github.com/medium/picchu/decide/preflight"
	"github.com/medium/picchu/decide/release"
)

func TestStuckClocks(t *testing.T) {
	var c stuckClocks
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	after := 10 * time.Minute
	for i, tc := range []struct {
		key  string
		held bool
		at   time.Duration
		tell bool
	}{
		{"a", true, 0, false},
		{"b", true, 5 * time.Minute, false},
		{"a", true, 9 * time.Minute, false},
		{"a", true, 10 * time.Minute, true},  // held 10 minutes: told
		{"a", true, 30 * time.Minute, false}, // once per hold
		{"b", true, 15 * time.Minute, true},
		{"a", false, 31 * time.Minute, false}, // the hold ends
		{"a", true, 32 * time.Minute, false},  // a new hold starts its clock
		{"a", true, 42 * time.Minute, true},
	} {
		if got := c.observe(tc.key, tc.held, t0.Add(tc.at), after); got != tc.tell {
			t.Errorf("%d: %s held %t at %s: tell %t, want %t", i, tc.key, tc.held, tc.at, got, tc.tell)
		}
	}
	if c.observe("c", true, t0, 0) || c.observe("c", true, t0.Add(time.Hour), 0) {
		t.Error("told with the stuck notice off (after 0)")
	}
}

// TestHeldBy: a release in progress is held by clusters not synced or
// alerts that cannot be read; one not in progress, or not held, is not.
func TestHeldBy(t *testing.T) {
	v2 := build("v2", release.Releasing, 20, release.Step{State: release.Releasing}, 20)
	v1 := build("v1", release.Released, 80, release.Step{State: release.Released}, 80)
	s := reportSnapshot(v2, v1)
	progressing := conditionInputs{progressing: []string{"v2 releasing"}}
	noRoom := map[string]*preflight.Failure{"west": {Check: preflight.Capacity, Detail: "1 pod of v2 finds no room"}}
	for _, tc := range []struct {
		name          string
		c             conditionInputs
		alerts        []string
		preflight     map[string]*preflight.Failure
		wantTag, want string
	}{
		{"not held", progressing, nil, nil, "", ""},
		{"a cluster not synced", conditionInputs{progressing: progressing.progressing, unavailable: []string{"east"}}, nil, nil, "v2", "not synced on east"},
		{"alerts unread", progressing, []string{"v2: prometheus: timeout"}, nil, "v2", "alerts cannot be read (v2: prometheus: timeout)"},
		{"nothing in progress", conditionInputs{unavailable: []string{"east"}}, nil, nil, "", ""},
		{"a pre-flight check fails", progressing, nil, noRoom, "v2",
			"pre-flight checks fail (v2 held on cluster west: capacity: 1 pod of v2 finds no room)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.alertProblems, v2.preflight = tc.alerts, tc.preflight
			tag, why := heldBy(s, tc.c)
			if tag != tc.wantTag || why != tc.want {
				t.Errorf("heldBy = %q, %q; want %q, %q", tag, why, tc.wantTag, tc.want)
			}
		})
	}
	n := stuckNotice(s, "v2", "not synced on east", 10*time.Minute)
	if got, want := n.Text(), "*shop* `v2` in production: stuck, held for 10m0s: not synced on east"; got != want {
		t.Errorf("stuck notice %q, want %q", got, want)
	}
}
