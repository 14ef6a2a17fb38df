package mesh

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// weighing is routes of app shop, whose one tag has all the traffic.
func weighing(tag string) routes {
	r := newRoutes()
	r.set("shop", "shop-production", map[string]int32{tag: 100})
	return r
}

// Test_routeLine reads routes at given times and checks which are in
// effect after each reading: the last read at least the lag before, the
// first ones at once.
func Test_routeLine(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	type reading struct {
		at       time.Time
		read     string // the tag the routes read weigh
		inEffect string // the tag of the routes in effect after it
		why      string
	}
	for _, tc := range []struct {
		name     string
		lag      time.Duration
		readings []reading
	}{
		{"a change takes effect the lag after it is read, not before", time.Second, []reading{
			{ms(0), "v1", "v1", "the first routes read: in effect at once"},
			{ms(250), "v2", "v1", "v2 read"},
			{ms(500), "v2", "v1", ""},
			{ms(1249), "v2", "v1", "999 ms after v2 was read"},
			{ms(1250), "v2", "v2", "the lag after v2 was read"},
			{ms(1500), "v3", "v2", "v3 read"},
			{ms(2499), "v3", "v2", "999 ms after v3 was read"},
			{ms(2500), "v3", "v3", "the lag after v3 was read"},
		}},
		{"no lag: each change at once", 0, []reading{
			{ms(0), "v1", "v1", ""},
			{ms(250), "v2", "v2", ""},
			{ms(251), "v1", "v1", ""},
		}},
		{"a change that lasted less than a reading's lag still takes effect", time.Second, []reading{
			{ms(0), "v1", "v1", ""},
			{ms(250), "v2", "v1", "v2 read once"},
			{ms(500), "v1", "v1", "and undone"},
			{ms(1250), "v1", "v2", "v2 in effect the lag after it was read"},
			{ms(1500), "v1", "v1", "then v1 again"},
		}},
		{"after a gap in the readings, the last read the lag before", time.Second, []reading{
			{ms(0), "v1", "v1", ""},
			{ms(100), "v2", "v1", ""},
			{ms(200), "v3", "v1", ""},
			{ms(300), "v4", "v1", "cluster down after this"},
			{ms(1350), "v5", "v4", "v2, v3, v4 all due: v4, the last"},
			{ms(2349), "v5", "v4", ""},
			{ms(2350), "v5", "v5", ""},
		}},
		{"a gap longer than the lag: the routes read before it, then the new ones the lag later", time.Second, []reading{
			{ms(0), "v1", "v1", ""},
			{ms(100), "v2", "v1", "cluster down after this"},
			{ms(5000), "v3", "v2", "v2 was read long ago"},
			{ms(5999), "v3", "v2", ""},
			{ms(6000), "v3", "v3", ""},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &routeLine{lag: tc.lag}
			for i, r := range tc.readings {
				got := l.read(r.at, weighing(r.read))
				if want := weighing(r.inEffect); !reflect.DeepEqual(got, want) {
					t.Errorf("reading %d (%s read at +%s%s): %v in effect, want %v",
						i, r.read, r.at.Sub(t0), note(r.why), got.weights, want.weights)
				}
			}
			// Only the routes read within the lag of the last reading wait.
			last := tc.readings[len(tc.readings)-1].at
			want := 0
			for _, r := range tc.readings[1:] {
				if r.at.After(last.Add(-tc.lag)) {
					want++
				}
			}
			if len(l.pending) != want {
				t.Errorf("%d routes pending after the last reading, want %d", len(l.pending), want)
			}
		})
	}
}

func note(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf(": %s", s)
}
