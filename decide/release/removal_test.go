package release

import (
	"testing"
	"time"
)

func TestRemoveOrphan(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	grace := 5 * time.Minute
	for _, tc := range []struct {
		name    string
		now     time.Time
		traffic bool
		want    Removal
	}{
		{"just orphaned, no traffic: wait for the grace period", t0, false, Removal{Due: t0.Add(grace)}},
		{"within the grace period", t0.Add(grace - time.Nanosecond), false, Removal{Due: t0.Add(grace)}},
		{"grace period over, no traffic: removed", t0.Add(grace), false, Removal{Remove: true}},
		{"long after, no traffic: removed", t0.Add(24 * time.Hour), false, Removal{Remove: true}},
		{"just orphaned with traffic: held", t0, true, Removal{HeldByTraffic: true}},
		{"grace period over with traffic: still held", t0.Add(24 * time.Hour), true, Removal{HeldByTraffic: true}},
		{"clock behind the orphaning: wait", t0.Add(-time.Minute), false, Removal{Due: t0.Add(grace)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RemoveOrphan(t0, tc.now, grace, tc.traffic); got != tc.want {
				t.Errorf("RemoveOrphan = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FuzzRemoveOrphan checks the promises whatever the times: a serving app is
// never removed, and an app is never removed before its grace period ends.
func FuzzRemoveOrphan(f *testing.F) {
	f.Add(int64(0), int64(0), int64(time.Minute), false)
	f.Add(int64(0), int64(time.Hour), int64(time.Minute), true)
	f.Fuzz(func(t *testing.T, since, now, grace int64, traffic bool) {
		s, n := time.Unix(0, since), time.Unix(0, now)
		r := RemoveOrphan(s, n, time.Duration(grace), traffic)
		if traffic && r.Remove {
			t.Fatal("a serving app was removed")
		}
		if r.Remove && n.Before(s.Add(time.Duration(grace))) {
			t.Fatal("removed before the grace period ended")
		}
		if !r.Remove && !r.HeldByTraffic && r.Due.IsZero() {
			t.Fatal("neither removed nor held nor due")
		}
	})
}
