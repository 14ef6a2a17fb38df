package mesh

import (
	"reflect"
	"testing"
	"time"
)

// Test_unreadyCounter: the counts grow from the clock at the rates last
// set, keep what they counted when their rate goes to 0 or their series
// is left out, and a series never given a rate above 0 is not there.
func Test_unreadyCounter(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	u := newUnreadyCounter(func() time.Time { return now })
	a, b := weightSeries{"east", "shop", "v1"}, weightSeries{"west", "shop", "v2"}
	at := func(d time.Duration, want map[string]map[string]map[string]float64) {
		t.Helper()
		now = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(d)
		if got := u.counts(); !reflect.DeepEqual(got, want) {
			t.Errorf("at +%s: %v, want %v", d, got, want)
		}
	}
	count := func(east, west float64, withWest bool) map[string]map[string]map[string]float64 {
		out := map[string]map[string]map[string]float64{"east": {"shop": {"v1": east}}}
		if withWest {
			out["west"] = map[string]map[string]float64{"shop": {"v2": west}}
		}
		return out
	}
	u.setRates(map[weightSeries]float64{a: 100, b: 0})
	at(0, count(0, 0, false))
	at(500*time.Millisecond, count(50, 0, false))
	u.setRates(map[weightSeries]float64{a: 40, b: 10})
	at(time.Second, count(70, 5, true))
	u.setRates(map[weightSeries]float64{b: 10})
	at(2*time.Second, count(70, 15, true))
	u.setRates(nil)
	at(time.Hour, count(70, 15, true))
}
