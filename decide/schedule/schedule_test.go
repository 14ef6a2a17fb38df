package schedule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

const (
	always   = picchuv1alpha1.ScheduleAlways
	inhumane = picchuv1alpha1.ScheduleInhumane
	humane   = picchuv1alpha1.ScheduleHumane
)

// laZone is loaded once for the helpers; TestMain stops if it cannot be.
var laZone, laErr = time.LoadLocation("America/Los_Angeles")

// est is a zone other than LA's, three hours ahead of it in winter.
var est = time.FixedZone("EST", -5*60*60)

func TestMain(m *testing.M) {
	if laErr != nil {
		fmt.Fprintln(os.Stderr, "load America/Los_Angeles:", laErr)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// la is a wall-clock time in America/Los_Angeles.
func la(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, laZone)
}

// utc is a wall-clock time in UTC.
func utc(y int, m time.Month, d, h, min int) time.Time {
	return time.Date(y, m, d, h, min, 0, 0, time.UTC)
}

func newCalendar(t *testing.T, enabled bool) *Calendar {
	t.Helper()
	c, err := New(enabled)
	if err != nil {
		t.Fatalf("New(%v): %v", enabled, err)
	}
	return c
}

// holidayDates lists every holiday of the calendar in at least two years, on the
// day it is observed.
var holidayDates = []struct {
	name string
	day  time.Time
}{
	{"new year 2024", la(2024, time.January, 1, 12, 0)},
	{"new year 2026", la(2026, time.January, 1, 12, 0)},
	{"new year 2027 (friday)", la(2027, time.January, 1, 12, 0)},
	{"new year 2028 on saturday, observed friday 2027-12-31", la(2027, time.December, 31, 12, 0)},
	{"mlk 2024", la(2024, time.January, 15, 12, 0)},
	{"mlk 2025", la(2025, time.January, 20, 12, 0)},
	{"mlk 2027", la(2027, time.January, 18, 12, 0)},
	{"presidents 2024", la(2024, time.February, 19, 12, 0)},
	{"presidents 2026", la(2026, time.February, 16, 12, 0)},
	{"memorial 2024", la(2024, time.May, 27, 12, 0)},
	{"memorial 2025", la(2025, time.May, 26, 12, 0)},
	{"memorial 2027", la(2027, time.May, 31, 12, 0)},
	{"juneteenth 2024", la(2024, time.June, 19, 12, 0)},
	{"juneteenth 2025", la(2025, time.June, 19, 12, 0)},
	{"juneteenth 2026 (friday)", la(2026, time.June, 19, 12, 0)},
	{"juneteenth 2027 on saturday, observed friday", la(2027, time.June, 18, 12, 0)},
	{"independence 2024", la(2024, time.July, 4, 12, 0)},
	{"independence 2025", la(2025, time.July, 4, 12, 0)},
	{"independence 2026 on saturday, observed friday", la(2026, time.July, 3, 12, 0)},
	{"independence 2027 on sunday, observed monday", la(2027, time.July, 5, 12, 0)},
	{"labor 2024", la(2024, time.September, 2, 12, 0)},
	{"labor 2026", la(2026, time.September, 7, 12, 0)},
	{"thanksgiving 2024", la(2024, time.November, 28, 12, 0)},
	{"thanksgiving 2027", la(2027, time.November, 25, 12, 0)},
	{"day after thanksgiving 2024", la(2024, time.November, 29, 12, 0)},
	{"day after thanksgiving 2025", la(2025, time.November, 28, 12, 0)},
	{"christmas eve 2024", la(2024, time.December, 24, 12, 0)},
	{"christmas eve 2025", la(2025, time.December, 24, 12, 0)},
	{"christmas 2025", la(2025, time.December, 25, 12, 0)},
	{"christmas 2026 (friday)", la(2026, time.December, 25, 12, 0)},
	{"christmas 2027 on saturday, observed friday with christmas eve", la(2027, time.December, 24, 12, 0)},
	{"new year's eve 2024", la(2024, time.December, 31, 12, 0)},
	{"new year's eve 2026", la(2026, time.December, 31, 12, 0)},
}

func TestIsHoliday(t *testing.T) {
	c := newCalendar(t, true)
	for _, tc := range holidayDates {
		t.Run(tc.name, func(t *testing.T) {
			if !c.IsHoliday(tc.day) {
				t.Errorf("IsHoliday(%v) = false, want true", tc.day)
			}
		})
	}
	for _, tc := range []struct {
		name string
		day  time.Time
	}{
		{"columbus day 2025", la(2025, time.October, 13, 12, 0)},
		{"columbus day 2026", la(2026, time.October, 12, 12, 0)},
		{"veterans day 2025", la(2025, time.November, 11, 12, 0)},
		{"veterans day 2024", la(2024, time.November, 11, 12, 0)},
		{"ordinary tuesday", la(2025, time.March, 11, 12, 0)},
		{"monday after christmas 2027", la(2027, time.December, 27, 12, 0)},
		{"thursday before independence observed 2026", la(2026, time.July, 2, 12, 0)},
		{"juneteenth before 2021", la(2020, time.June, 19, 12, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c.IsHoliday(tc.day) {
				t.Errorf("IsHoliday(%v) = true, want false", tc.day)
			}
		})
	}
}

// TestIsHoliday_UsesTheDayInLosAngeles proves bug 3 fixed: the day is read
// in LA, whatever the zone of the instant.
func TestIsHoliday_UsesTheDayInLosAngeles(t *testing.T) {
	c := newCalendar(t, true)
	// 2025-01-21 02:00 UTC is MLK Day (Monday 2025-01-20) 18:00 in LA.
	if !c.IsHoliday(utc(2025, time.January, 21, 2, 0)) {
		t.Error("2025-01-21 02:00 UTC is MLK Day in LA")
	}
	// 2025-01-20 06:00 UTC is Sunday 22:00 in LA.
	if c.IsHoliday(utc(2025, time.January, 20, 6, 0)) {
		t.Error("2025-01-20 06:00 UTC is the Sunday before MLK Day in LA")
	}
}

func TestPermits_Holidays(t *testing.T) {
	c := newCalendar(t, true)
	for _, tc := range holidayDates {
		t.Run(tc.name, func(t *testing.T) {
			for _, s := range []picchuv1alpha1.Schedule{inhumane, humane, ""} {
				if c.Permits(s, tc.day) {
					t.Errorf("Permits(%q, %v) = true on a holiday", s, tc.day)
				}
			}
			if !c.Permits(always, tc.day) {
				t.Errorf("Permits(always, %v) = false", tc.day)
			}
		})
	}
}

func TestPermits(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule picchuv1alpha1.Schedule
		at       time.Time
		want     bool
	}{
		// always
		{"always on a saturday", always, la(2025, time.March, 8, 3, 0), true},
		{"always on christmas", always, la(2025, time.December, 25, 3, 0), true},
		{"always on a weekday night", always, la(2026, time.March, 11, 23, 0), true},

		// inhumane
		{"inhumane on a weekday night", inhumane, la(2024, time.March, 12, 23, 30), true},
		{"inhumane at weekday midnight", inhumane, la(2025, time.March, 11, 0, 0), true},
		{"inhumane on saturday", inhumane, la(2024, time.March, 9, 12, 0), false},
		{"inhumane on sunday", inhumane, la(2026, time.March, 8, 12, 0), false},
		{"inhumane on friday 23:59", inhumane, la(2027, time.March, 12, 23, 59), true},
		{"inhumane on columbus day", inhumane, la(2025, time.October, 13, 12, 0), true},
		{"inhumane on veterans day", inhumane, la(2026, time.November, 11, 12, 0), true},
		{"inhumane the day before a holiday, late", inhumane, la(2025, time.November, 26, 22, 0), true},

		// humane, weekday boundaries
		{"humane 06:59", humane, la(2025, time.March, 11, 6, 59), false},
		{"humane 07:00", humane, la(2025, time.March, 11, 7, 0), true},
		{"humane 15:59", humane, la(2025, time.March, 11, 15, 59), true},
		{"humane 16:00", humane, la(2025, time.March, 11, 16, 0), false},
		{"humane 07:00 in 2024", humane, la(2024, time.October, 16, 7, 0), true},
		{"humane 16:00 in 2026", humane, la(2026, time.October, 14, 16, 0), false},
		{"humane 15:59 in 2027", humane, la(2027, time.April, 14, 15, 59), true},
		{"humane friday 13:59", humane, la(2025, time.March, 14, 13, 59), true},
		{"humane friday 14:00", humane, la(2025, time.March, 14, 14, 0), false},
		{"humane friday 07:00", humane, la(2026, time.May, 15, 7, 0), true},
		{"humane friday 06:59", humane, la(2026, time.May, 15, 6, 59), false},
		{"humane saturday noon", humane, la(2025, time.March, 15, 12, 0), false},
		{"humane sunday noon", humane, la(2027, time.March, 14, 12, 0), false},

		// humane, the day before a holiday
		{"humane before thanksgiving 13:59", humane, la(2025, time.November, 26, 13, 59), true},
		{"humane before thanksgiving 14:00", humane, la(2025, time.November, 26, 14, 0), false},
		{"humane before observed july 4 2026 14:00", humane, la(2026, time.July, 2, 14, 0), false},
		{"humane before observed july 4 2026 13:00", humane, la(2026, time.July, 2, 13, 0), true},
		{"humane before christmas eve 2024 14:00", humane, la(2024, time.December, 23, 14, 0), false},
		{"humane before christmas eve 2027 14:00", humane, la(2027, time.December, 23, 14, 0), false},
		{"humane before new year's eve 2025 15:00", humane, la(2025, time.December, 30, 15, 0), false},
		{"humane before juneteenth 2024 15:00", humane, la(2024, time.June, 18, 15, 0), false},
		{"humane before observed july 4 2027 (sunday)", humane, la(2027, time.July, 4, 10, 0), false},
		{"humane after a holiday is ordinary", humane, la(2027, time.July, 6, 15, 0), true},

		// bug 3: Monday in UTC, Sunday in LA, and the other way round
		{"inhumane monday 05:00 UTC is sunday in LA", inhumane, utc(2025, time.January, 13, 5, 0), false},
		{"humane monday 03:00 UTC is sunday in LA", humane, utc(2026, time.February, 9, 3, 0), false},
		{"inhumane saturday 04:00 UTC is friday in LA", inhumane, utc(2025, time.January, 18, 4, 0), true},
		{"inhumane tuesday 02:00 UTC is MLK day in LA", inhumane, utc(2025, time.January, 21, 2, 0), false},
		{"humane 15:00 UTC is 07:00 PST", humane, utc(2025, time.January, 14, 15, 0), true},
		{"humane 14:59 UTC is 06:59 PST", humane, utc(2025, time.January, 14, 14, 59), false},
		{"humane 09:00 EST is 06:00 PST", humane, time.Date(2025, time.January, 14, 9, 0, 0, 0, est), false},
		{"humane 16:00 EST is 13:00 PST", humane, time.Date(2025, time.January, 14, 16, 0, 0, 0, est), true},

		// DST change days (Sundays) and the Mondays after them
		{"inhumane on spring-forward sunday", inhumane, la(2025, time.March, 9, 12, 0), false},
		{"inhumane on fall-back sunday", inhumane, la(2025, time.November, 2, 12, 0), false},
		{"humane monday after spring forward 06:59 PDT", humane, utc(2025, time.March, 10, 13, 59), false},
		{"humane monday after spring forward 07:00 PDT", humane, utc(2025, time.March, 10, 14, 0), true},
		{"humane monday after spring forward 15:59 PDT", humane, utc(2025, time.March, 10, 22, 59), true},
		{"humane monday after spring forward 16:00 PDT", humane, utc(2025, time.March, 10, 23, 0), false},
		{"humane monday after fall back 06:59 PST", humane, utc(2025, time.November, 3, 14, 59), false},
		{"humane monday after fall back 07:00 PST", humane, utc(2025, time.November, 3, 15, 0), true},
		{"inhumane monday after fall back 00:00 PST", inhumane, utc(2026, time.November, 2, 8, 0), true},
		{"inhumane sunday 23:59 PST before it", inhumane, utc(2026, time.November, 2, 7, 59), false},

		// unknown and empty strings
		{"empty is inhumane: weekday night", "", la(2025, time.March, 11, 23, 0), true},
		{"empty is inhumane: saturday", "", la(2025, time.March, 15, 12, 0), false},
		{"unknown is always: saturday", "whenever", la(2025, time.March, 15, 12, 0), true},
		{"unknown is always: christmas", "Humane", la(2025, time.December, 25, 12, 0), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalendar(t, true)
			if got := c.Permits(tc.schedule, tc.at); got != tc.want {
				t.Errorf("Permits(%q, %v) = %v, want %v", tc.schedule, tc.at, got, tc.want)
			}
		})
	}
}

func TestPermits_KillSwitch(t *testing.T) {
	off := newCalendar(t, false)
	tuesdayNoon := la(2025, time.March, 11, 12, 0)
	for _, tc := range []struct {
		schedule picchuv1alpha1.Schedule
		want     bool
	}{
		{always, true},
		{humane, false},
		{inhumane, false},
		{"", false},
		{"whenever", false},
	} {
		t.Run(string(tc.schedule), func(t *testing.T) {
			if got := off.Permits(tc.schedule, tuesdayNoon); got != tc.want {
				t.Errorf("Permits(%q) with the kill switch = %v, want %v", tc.schedule, got, tc.want)
			}
			if _, ok := off.NextWindow(tc.schedule, tuesdayNoon); ok != tc.want {
				t.Errorf("NextWindow(%q) with the kill switch: ok = %v, want %v", tc.schedule, ok, tc.want)
			}
		})
	}
}

func TestCanRelease(t *testing.T) {
	saturday := la(2025, time.March, 15, 12, 0)
	tuesday := la(2025, time.March, 11, 12, 0)
	for _, tc := range []struct {
		name         string
		enabled      bool
		schedule     picchuv1alpha1.Schedule
		peak, canary int32
		created, now time.Time
		want         bool
	}{
		{"released past the canary, outside the window", true, humane, 50, 10, saturday, saturday, true},
		{"released past the canary, kill switch on", false, humane, 50, 10, saturday, saturday, true},
		{"released past a zero canary", true, humane, 1, 0, saturday, saturday, true},
		{"peak at the canary is not past it", true, humane, 10, 10, saturday, saturday, false},
		{"peak below the canary", true, humane, 5, 10, saturday, saturday, false},
		{"never released", true, humane, 0, 0, saturday, saturday, false},
		{"permitted at creation only", true, humane, 0, 0, tuesday, saturday, true},
		{"permitted now only", true, humane, 0, 0, saturday, tuesday, true},
		{"permitted at both", true, inhumane, 0, 10, tuesday, tuesday, true},
		{"kill switch blocks both", false, inhumane, 0, 0, tuesday, tuesday, false},
		{"kill switch lets always through", false, always, 0, 0, saturday, saturday, true},
		{"zero creation time permits nothing by itself", true, humane, 0, 0, time.Time{}, saturday, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalendar(t, tc.enabled)
			if got := c.CanRelease(tc.schedule, tc.peak, tc.canary, tc.created, tc.now); got != tc.want {
				t.Errorf("CanRelease(%q, %d, %d, %v, %v) = %v, want %v",
					tc.schedule, tc.peak, tc.canary, tc.created, tc.now, got, tc.want)
			}
		})
	}
}

func TestNextWindow(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule picchuv1alpha1.Schedule
		from     time.Time
		want     time.Time
	}{
		{"inside a window is now", humane, la(2025, time.March, 11, 10, 17), la(2025, time.March, 11, 10, 17)},
		{"always is now", always, la(2025, time.December, 25, 3, 0), la(2025, time.December, 25, 3, 0)},
		{"an unknown schedule is now, as always", "weekly", la(2025, time.December, 27, 3, 0), la(2025, time.December, 27, 3, 0)},
		{"before opening", humane, la(2025, time.March, 11, 5, 30), la(2025, time.March, 11, 7, 0)},
		{"after closing", humane, la(2025, time.March, 11, 16, 0), la(2025, time.March, 12, 7, 0)},
		{"friday 14:00 to monday 07:00", humane, la(2025, time.March, 14, 14, 0), la(2025, time.March, 17, 7, 0)},
		{"friday 14:00 to tuesday after labor day", humane, la(2025, time.August, 29, 14, 0), la(2025, time.September, 2, 7, 0)},
		{"friday 14:00 to tuesday after MLK day", humane, la(2027, time.January, 15, 14, 0), la(2027, time.January, 19, 7, 0)},
		{"wednesday before thanksgiving to monday", humane, la(2025, time.November, 26, 14, 0), la(2025, time.December, 1, 7, 0)},
		{"thanksgiving to monday, inhumane", inhumane, la(2025, time.November, 27, 10, 0), la(2025, time.December, 1, 0, 0)},
		{"christmas 2027 weekend", humane, la(2027, time.December, 23, 14, 0), la(2027, time.December, 27, 7, 0)},
		{"new year 2028 weekend, inhumane", inhumane, la(2027, time.December, 31, 9, 0), la(2028, time.January, 3, 0, 0)},
		{"christmas to new year 2025", humane, la(2025, time.December, 24, 9, 0), la(2025, time.December, 26, 7, 0)},
		{"observed july 4 2026", humane, la(2026, time.July, 2, 14, 0), la(2026, time.July, 6, 7, 0)},
		{"saturday inhumane to monday midnight", inhumane, la(2024, time.March, 9, 12, 0), la(2024, time.March, 11, 0, 0)},
		{"empty schedule is inhumane", "", la(2024, time.March, 9, 12, 0), la(2024, time.March, 11, 0, 0)},
		{"across spring forward", humane, la(2025, time.March, 7, 14, 0), utc(2025, time.March, 10, 14, 0)},
		{"across fall back", humane, la(2025, time.October, 31, 14, 0), utc(2025, time.November, 3, 15, 0)},
		{"across fall back, inhumane", inhumane, la(2026, time.October, 31, 1, 0), utc(2026, time.November, 2, 8, 0)},
		{"sunday in LA, monday in UTC", humane, utc(2025, time.January, 13, 5, 0), utc(2025, time.January, 13, 15, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalendar(t, true)
			got, ok := c.NextWindow(tc.schedule, tc.from)
			if !ok || !got.Equal(tc.want) {
				t.Fatalf("NextWindow(%q, %v) = %v, %v; want %v", tc.schedule, tc.from, got, ok, tc.want)
			}
			if got.Location() != tc.from.Location() {
				t.Errorf("NextWindow returned %v in %v, want %v", got, got.Location(), tc.from.Location())
			}
			checkWindow(t, c, tc.schedule, tc.from, got)
		})
	}
}

// checkWindow checks the result of NextWindow: it is not before from, it is
// permitted, and (when later than from) the instant before it is not.
func checkWindow(t *testing.T, c *Calendar, s picchuv1alpha1.Schedule, from, next time.Time) {
	t.Helper()
	if next.Before(from) {
		t.Errorf("NextWindow(%q, %v) = %v, before the start", s, from, next)
	}
	if !c.Permits(s, next) {
		t.Errorf("Permits(%q, NextWindow(%v) = %v) = false", s, from, next)
	}
	if next.After(from) && c.Permits(s, next.Add(-time.Nanosecond)) {
		t.Errorf("Permits(%q, %v) = true, just before NextWindow(%v)", s, next.Add(-time.Nanosecond), from)
	}
}

// TestNextWindow_Property checks NextWindow on random instants in 2024-2030:
// the result is not before the start, is permitted, and no minute between
// the start and it is permitted.
func TestNextWindow_Property(t *testing.T) {
	c := newCalendar(t, true)
	rng := rand.New(rand.NewPCG(1, 2))
	lo := utc(2024, time.January, 1, 0, 0).Unix()
	hi := utc(2031, time.January, 1, 0, 0).Unix()
	const samples = 500
	for range samples {
		from := time.Unix(lo+rng.Int64N(hi-lo), rng.Int64N(int64(time.Second))).UTC()
		for _, s := range []picchuv1alpha1.Schedule{humane, inhumane, always} {
			next, ok := c.NextWindow(s, from)
			if !ok {
				t.Fatalf("NextWindow(%q, %v): no window in 14 days", s, from)
			}
			checkWindow(t, c, s, from, next)
			for m := from; m.Before(next); m = m.Add(time.Minute) {
				if c.Permits(s, m) {
					t.Fatalf("Permits(%q, %v) = true, before NextWindow(%v) = %v", s, m, from, next)
				}
			}
		}
	}
}

func TestClosed_SaysWhyPermitsRefuses(t *testing.T) {
	c, err := New(true)
	if err != nil {
		t.Fatal(err)
	}
	la, _ := time.LoadLocation("America/Los_Angeles")
	at := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 30, 0, 0, la) }
	for _, tc := range []struct {
		s    picchuv1alpha1.Schedule
		t    time.Time
		want string
	}{
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 24, 10), ""},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 26, 10), "holiday Thanksgiving Day"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 27, 10), "holiday Day After Thanksgiving Day"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 28, 10), "Saturday"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 30, 5), "before 07:00 America/Los_Angeles"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 30, 16), "after 16:00 America/Los_Angeles"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 12, 4, 15), "after 14:00 America/Los_Angeles on a Friday"},
		{picchuv1alpha1.ScheduleHumane, at(2026, 11, 25, 15), "after 14:00 America/Los_Angeles on the eve of a holiday"},
		{picchuv1alpha1.ScheduleInhumane, at(2026, 11, 29, 3), "Sunday"},
		{picchuv1alpha1.ScheduleAlways, at(2026, 11, 26, 3), ""},
	} {
		if got := c.Closed(tc.s, tc.t); got != tc.want {
			t.Errorf("Closed(%s, %s) = %q, want %q", tc.s, tc.t, got, tc.want)
		}
		if got := c.Closed(tc.s, tc.t) == ""; got != c.Permits(tc.s, tc.t) {
			t.Errorf("Closed(%s, %s) and Permits disagree", tc.s, tc.t)
		}
	}
	off, err := New(false)
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Closed(picchuv1alpha1.ScheduleHumane, at(2026, 11, 24, 10)); !strings.Contains(got, "turned off") {
		t.Errorf("with the kill switch Closed = %q", got)
	}
}
