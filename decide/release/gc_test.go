package release

import (
	"slices"
	"testing"
	"time"
)

// build is a candidate in state s created age before t0 with the given ttl.
func build(s State, age, ttl time.Duration) GCCandidate {
	return GCCandidate{State: s, Created: t0.Add(-age), TTL: ttl}
}

// old and fresh are candidates whose day-long ttl has and has not run out at t0.
func old(s State) GCCandidate   { return build(s, 48*time.Hour, 24*time.Hour) }
func fresh(s State) GCCandidate { return build(s, time.Hour, 24*time.Hour) }

func TestCollectable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		builds []GCCandidate
		want   []bool
	}{
		{"nil input", nil, []bool{}},
		{"empty input", []GCCandidate{}, []bool{}},
		{"the newest three retired are kept even when expired",
			[]GCCandidate{old(Retired), old(Retired), old(Retired)},
			[]bool{false, false, false}},
		{"the fourth and fifth retired, expired, are collectable",
			[]GCCandidate{old(Retired), old(Retired), old(Retired), old(Retired), old(Retired)},
			[]bool{false, false, false, true, true}},
		{"retired that has not expired is kept",
			[]GCCandidate{old(Retired), old(Retired), old(Retired), fresh(Retired), old(Retired)},
			[]bool{false, false, false, false, true}},
		{"kept retired count whether or not they expired",
			[]GCCandidate{fresh(Retired), fresh(Retired), fresh(Retired), old(Retired)},
			[]bool{false, false, false, true}},
		{"the newest retired are counted among the other states",
			[]GCCandidate{old(Failed), old(Retired), old(Released), old(Retired), old(Retired), old(Retired)},
			[]bool{true, false, false, false, false, true}},
		{"expiry at exactly now is collectable",
			[]GCCandidate{old(Released), build(Failed, 24*time.Hour, 24*time.Hour)},
			[]bool{false, true}},
		{"one second before expiry is kept",
			[]GCCandidate{old(Released), build(Failed, 24*time.Hour-time.Second, 24*time.Hour)},
			[]bool{false, false}},
		{"failed and expired is collectable",
			[]GCCandidate{old(Released), old(Failed)},
			[]bool{false, true}},
		{"failed, not expired, is kept",
			[]GCCandidate{old(Released), fresh(Failed)},
			[]bool{false, false}},
		{"deleting and deleted, expired, are collectable",
			[]GCCandidate{old(Released), old(Deleting), old(Deleted)},
			[]bool{false, true, true}},
		{"unknown creation time never expires",
			[]GCCandidate{old(Released), {State: Failed, TTL: time.Second}},
			[]bool{false, false}},
		{"no ttl never expires",
			[]GCCandidate{old(Released), build(Failed, 48*time.Hour, 0)},
			[]bool{false, false}},
		{"negative ttl never expires",
			[]GCCandidate{old(Released), build(Failed, 48*time.Hour, -time.Hour)},
			[]bool{false, false}},
		{"when all are collectable the newest is spared",
			[]GCCandidate{old(Failed), old(Deleted), old(Deleting), old(Failed)},
			[]bool{false, true, true, true}},
		{"past the newest DefaultKeepDone done builds, unexpired ones go too",
			append(append([]GCCandidate{fresh(Released)}, slices.Repeat([]GCCandidate{fresh(Failed)}, DefaultKeepDone)...),
				fresh(Deleting), build(Deleted, 48*time.Hour, 0), fresh(Releasing)),
			append(append([]bool{false}, slices.Repeat([]bool{false}, DefaultKeepDone)...), true, true, false)},
		{"the newest retired are kept past DefaultKeepDone",
			append(slices.Repeat([]GCCandidate{fresh(Failed)}, DefaultKeepDone), fresh(Retired), fresh(Failed)),
			append(slices.Repeat([]bool{false}, DefaultKeepDone), false, true)},
		{"a single collectable build is spared",
			[]GCCandidate{old(Failed)},
			[]bool{false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Collectable(tc.builds, t0, DefaultKeepDone); !slices.Equal(got, tc.want) {
				t.Errorf("Collectable(%+v)\n got %v\nwant %v", tc.builds, got, tc.want)
			}
		})
	}

	// A build in any other state is never collectable, however old.
	for _, s := range []State{"", "bogus", Created, Deploying, Deployed, PendingTest, Testing, Tested,
		Canarying, Canaried, PendingRelease, Releasing, Released, Retiring, Failing, TimingOut} {
		t.Run("never collects "+string(s), func(t *testing.T) {
			got := Collectable([]GCCandidate{old(Failed), old(s), old(Failed)}, t0, DefaultKeepDone)
			if want := []bool{true, false, true}; !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// gcStates are the states decodeCandidates picks from, with one unknown.
var gcStates = []State{Created, Deploying, Deployed, PendingTest, Testing, Tested, Canarying, Canaried,
	PendingRelease, Releasing, Released, Retiring, Retired, Failing, Failed, Deleting, Deleted, TimingOut, "bogus"}

// decodeCandidates turns fuzz bytes into builds, three bytes each: the
// state, the age in hours (0: unknown creation time; negative: in the
// future) and the ttl in hours (possibly zero or negative).
func decodeCandidates(data []byte, now time.Time) []GCCandidate {
	var out []GCCandidate
	for ; len(data) >= 3; data = data[3:] {
		c := GCCandidate{
			State: gcStates[int(data[0])%len(gcStates)],
			TTL:   time.Duration(int8(data[2])) * time.Hour,
		}
		if data[1] != 0 {
			c.Created = now.Add(-time.Duration(int8(data[1])) * time.Hour)
		}
		out = append(out, c)
	}
	return out
}

// done and notDone count the builds that are and are not done with.
func done(builds []GCCandidate) (n int) {
	for _, b := range builds {
		if collectableState(b.State) {
			n++
		}
	}
	return n
}

func notDone(builds []GCCandidate) int { return len(builds) - done(builds) }

// FuzzCollectable feeds Collectable any builds: it never panics, answers for
// every build, never takes the newest three retired builds or all builds,
// takes only builds in the states it may collect that expired or have
// keepDone newer builds done, and keeps at most keepDone done builds
// (plus the newest retired ones).
func FuzzCollectable(f *testing.F) {
	f.Add([]byte{}, int64(0), uint8(20))
	f.Add([]byte{12, 48, 24, 12, 48, 24, 12, 48, 24, 12, 48, 24}, int64(1_800_000_000), uint8(20))
	f.Add([]byte{14, 48, 24, 16, 48, 24, 15, 1, 24}, int64(0), uint8(1))
	f.Add([]byte{10, 200, 1, 12, 0, 5, 14, 100, 0, 12, 127, 127}, int64(-1), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, unix int64, keep uint8) {
		now := time.Unix(unix, 0)
		builds := decodeCandidates(data, now)
		keepDone := int(keep % 32)
		got := Collectable(builds, now, keepDone)
		if len(got) != len(builds) {
			t.Fatalf("%d answers for %d builds", len(got), len(builds))
		}
		retired, chosen := 0, 0
		for i, b := range builds {
			if b.State == Retired {
				retired++
			}
			if !got[i] {
				continue
			}
			chosen++
			if b.State == Retired && retired <= KeepRetired {
				t.Fatalf("takes retired build %d, one of the newest %d: %+v", i, KeepRetired, builds)
			}
			if !collectableState(b.State) {
				t.Fatalf("takes build %d in state %q", i, b.State)
			}
			if (b.Created.IsZero() || b.TTL <= 0 || b.Created.Add(b.TTL).After(now)) && done(builds[:i]) < keepDone {
				t.Fatalf("takes build %d before it expired, with %d newer builds done: %+v at %v", i, done(builds[:i]), b, now)
			}
		}
		if keptDone := len(builds) - chosen - notDone(builds); keptDone > keepDone+KeepRetired {
			t.Fatalf("keeps %d done builds of %d, keepDone %d: %+v at %v", keptDone, done(builds), keepDone, builds, now)
		}
		if len(builds) > 0 && chosen == len(builds) {
			t.Fatalf("takes every build: %+v", builds)
		}
	})
}

func TestNextCollection(t *testing.T) {
	in := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tc := range []struct {
		name   string
		builds []GCCandidate
		want   time.Time // zero: none comes
	}{
		{"no builds", nil, time.Time{}},
		{"a failed build that expires in a second",
			[]GCCandidate{old(Released), build(Failed, 0, time.Second)}, in(time.Second)},
		{"expired already: collectable now, nothing more to come",
			[]GCCandidate{old(Released), old(Failed)}, time.Time{}},
		{"the first of two expiries",
			[]GCCandidate{old(Released), build(Retired, time.Hour, 3*time.Hour), build(Failed, time.Hour, 2*time.Hour),
				old(Retired), old(Retired), old(Retired)}, in(time.Hour)},
		{"a build that is not done never comes, whatever its ttl",
			[]GCCandidate{old(Released), build(Releasing, 0, time.Second)}, time.Time{}},
		{"one of the newest three retired: its expiry collects nothing",
			[]GCCandidate{build(Retired, 0, time.Second), old(Released)}, time.Time{}},
		{"the newest, spared when all would go: its expiry collects nothing",
			[]GCCandidate{build(Failed, 0, time.Second)}, time.Time{}},
		{"an older build's expiry, when a newer one's collects nothing",
			[]GCCandidate{build(Retired, 0, time.Second), old(Released), build(Failed, 0, time.Minute)}, in(time.Minute)},
		{"no ttl or no creation time: never",
			[]GCCandidate{old(Released), build(Failed, 0, 0), {State: Failed, TTL: time.Second}}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NextCollection(tc.builds, t0, DefaultKeepDone)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("NextCollection = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}
}

// FuzzNextCollection: at the time NextCollection gives, a build is
// collectable that is not now, and at no earlier expiry; when it gives
// none, no expiry nor any later time makes one collectable.
func FuzzNextCollection(f *testing.F) {
	f.Add([]byte{}, int64(0), uint8(20))
	f.Add([]byte{14, 0, 1, 10, 48, 24, 12, 1, 3}, int64(1_800_000_000), uint8(20))
	f.Add([]byte{12, 1, 2, 12, 1, 3, 12, 1, 4, 12, 1, 5, 14, 2, 5}, int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, unix int64, keep uint8) {
		now := time.Unix(unix, 0)
		builds := decodeCandidates(data, now)
		keepDone := int(keep % 32)
		before := Collectable(builds, now, keepDone)
		more := func(at time.Time) bool {
			for i, c := range Collectable(builds, at, keepDone) {
				if c && !before[i] {
					return true
				}
			}
			return false
		}
		next, ok := NextCollection(builds, now, keepDone)
		if ok && (!next.After(now) || !more(next)) {
			t.Fatalf("next %v (now %v) collects nothing more: %+v", next, now, builds)
		}
		for _, b := range builds {
			at := b.Created.Add(b.TTL)
			if b.Created.IsZero() || !at.After(now) || (ok && !at.Before(next)) {
				continue
			}
			if more(at) {
				t.Fatalf("next %v, %v; but %v (an expiry) collects more: %+v at %v", next, ok, at, builds, now)
			}
		}
		if !ok && more(now.Add(1000*time.Hour)) {
			t.Fatalf("no next, but later more is collectable: %+v at %v", builds, now)
		}
	})
}
