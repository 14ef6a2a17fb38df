package schedule

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func weekly(name, from, to, zone string, days ...string) picchuv1alpha1.FreezeWindow {
	return picchuv1alpha1.FreezeWindow{Name: name, Weekly: &picchuv1alpha1.WeeklyWindow{Days: days, From: from, To: to, TimeZone: zone}}
}

func oneOff(name string, start, end time.Time) picchuv1alpha1.FreezeWindow {
	s, e := metav1.NewTime(start), metav1.NewTime(end)
	return picchuv1alpha1.FreezeWindow{Name: name, Start: &s, End: &e}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestFrozen decides freezes at given times, across the changes of daylight
// saving time in Los Angeles (2026-03-08 02:00 → 03:00, 2026-11-01
// 02:00 → 01:00).
func TestFrozen(t *testing.T) {
	const la = "America/Los_Angeles"
	upgrade := oneOff("upgrade", at("2026-11-25T10:00:00Z"), at("2026-11-25T12:00:00Z"))
	nights := weekly("nights", "22:00", "06:00", la, "Sat")
	for _, tc := range []struct {
		name      string
		windows   []picchuv1alpha1.FreezeWindow
		now       string
		open      bool
		until     string // when open
		next      string // when not open; "" for none
		freezeFor string // "" or the window name expected
	}{
		{"no window", nil, "2026-11-25T11:00:00Z", false, "", "", ""},
		{"before a one-off window", []picchuv1alpha1.FreezeWindow{upgrade}, "2026-11-25T09:00:00Z", false, "", "2026-11-25T10:00:00Z", ""},
		{"at its start", []picchuv1alpha1.FreezeWindow{upgrade}, "2026-11-25T10:00:00Z", true, "2026-11-25T12:00:00Z", "", "upgrade"},
		{"in it", []picchuv1alpha1.FreezeWindow{upgrade}, "2026-11-25T11:59:59Z", true, "2026-11-25T12:00:00Z", "", "upgrade"},
		{"at its end: open no more", []picchuv1alpha1.FreezeWindow{upgrade}, "2026-11-25T12:00:00Z", false, "", "", ""},
		{"a Saturday night in winter", []picchuv1alpha1.FreezeWindow{nights}, "2026-11-29T07:00:00Z", true, "2026-11-29T14:00:00Z", "", "nights"},
		{"the night the clocks go back lasts 9 hours", []picchuv1alpha1.FreezeWindow{nights}, "2026-11-01T06:30:00Z", true, "2026-11-01T14:00:00Z", "", "nights"},
		{"it opened at 22:00 daylight time", []picchuv1alpha1.FreezeWindow{nights}, "2026-11-01T04:59:00Z", false, "", "2026-11-01T05:00:00Z", ""},
		{"the night the clocks go forward lasts 7 hours", []picchuv1alpha1.FreezeWindow{nights}, "2026-03-08T06:00:00Z", true, "2026-03-08T13:00:00Z", "", "nights"},
		{"a Tuesday: next Saturday 22:00 local", []picchuv1alpha1.FreezeWindow{nights}, "2026-11-24T12:00:00Z", false, "", "2026-11-29T06:00:00Z", ""},
		{"a window across midnight and the week's end, seen on Monday", []picchuv1alpha1.FreezeWindow{weekly("late", "23:00", "01:00", "", "Sun")},
			"2026-11-30T00:30:00Z", true, "2026-11-30T01:00:00Z", "", "late"},
		{"every day when no day is named", []picchuv1alpha1.FreezeWindow{weekly("lunch", "12:00", "13:00", "Europe/Paris")},
			"2026-11-25T11:30:00Z", true, "2026-11-25T12:00:00Z", "", "lunch"},
		{"a skipped local time is read at the offset after the change: 02:30 to 03:30 still lasts an hour", []picchuv1alpha1.FreezeWindow{weekly("skipped", "02:30", "03:30", la)},
			"2026-03-08T10:15:00Z", true, "2026-03-08T10:30:00Z", "", "skipped"},
		{"and opened at 09:30 UTC", []picchuv1alpha1.FreezeWindow{weekly("skipped", "02:30", "03:30", la)},
			"2026-03-08T09:29:00Z", false, "", "2026-03-08T09:30:00Z", ""},
		{"touching windows make one freeze", []picchuv1alpha1.FreezeWindow{
			oneOff("a", at("2026-11-25T10:00:00Z"), at("2026-11-25T12:00:00Z")),
			oneOff("b", at("2026-11-25T12:00:00Z"), at("2026-11-25T14:00:00Z")),
		}, "2026-11-25T11:00:00Z", true, "2026-11-25T14:00:00Z", "", "a"},
		{"the one closing last names it", []picchuv1alpha1.FreezeWindow{
			oneOff("short", at("2026-11-25T10:00:00Z"), at("2026-11-25T11:00:00Z")),
			oneOff("long", at("2026-11-25T09:00:00Z"), at("2026-11-25T15:00:00Z")),
		}, "2026-11-25T10:30:00Z", true, "2026-11-25T15:00:00Z", "", "long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Frozen(tc.windows, at(tc.now))
			if got.Err != nil {
				t.Fatal(got.Err)
			}
			if got.Open != tc.open {
				t.Fatalf("open %t (%+v), want %t", got.Open, got, tc.open)
			}
			if tc.open && (!got.Until.Equal(at(tc.until)) || got.Name != tc.freezeFor) {
				t.Errorf("%s until %s, want %s until %s", got.Name, got.Until.UTC().Format(time.RFC3339), tc.freezeFor, tc.until)
			}
			if !tc.open && tc.next == "" && !got.Next.IsZero() {
				t.Errorf("next %s, want none", got.Next.UTC().Format(time.RFC3339))
			}
			if !tc.open && tc.next != "" && !got.Next.Equal(at(tc.next)) {
				t.Errorf("next %s, want %s", got.Next.UTC().Format(time.RFC3339), tc.next)
			}
			if due := got.Due(); tc.open && !due.Equal(got.Until) || !tc.open && !due.Equal(got.Next) {
				t.Errorf("due %v", due)
			}
		})
	}
}

// TestFrozen_AnUnreadableWindowFreezes: a window whose time zone is
// unknown freezes, with no end, and says why.
func TestFrozen_AnUnreadableWindowFreezes(t *testing.T) {
	got := Frozen([]picchuv1alpha1.FreezeWindow{weekly("upgrade", "01:00", "02:00", "Mars/Olympus_Mons")}, at("2026-11-25T11:00:00Z"))
	if !got.Open || got.Err == nil || !got.Until.IsZero() || !strings.Contains(got.String(), "weekly.timeZone") {
		t.Errorf("freeze %+v (%q), want open with the time zone named", got, got.String())
	}
	if s := (Freeze{Open: true, Name: "upgrade", Until: at("2026-11-25T12:00:00Z")}).String(); s != "upgrade until 2026-11-25T12:00:00Z" {
		t.Errorf("String() = %q", s)
	}
}

// TestFrozen_NeverWithoutAnEnd: a random weekly window is open at no
// instant for more than a day and a hour (the longest local day plus the
// window's overnight), and a time inside it is frozen until its end.
func TestFrozen_NeverWithoutAnEnd(t *testing.T) {
	w := weekly("w", "22:15", "03:45", "Europe/London", "Fri", "Sat")
	for now := at("2026-03-01T00:00:00Z"); now.Before(at("2026-04-15T00:00:00Z")); now = now.Add(17 * time.Minute) {
		got := Frozen([]picchuv1alpha1.FreezeWindow{w}, now)
		if got.Open && (got.Until.Sub(now) > 25*time.Hour || !got.Until.After(now)) {
			t.Fatalf("at %s: open until %s", now, got.Until)
		}
		if !got.Open && (got.Next.IsZero() || !got.Next.After(now) || got.Next.Sub(now) > 8*24*time.Hour) {
			t.Fatalf("at %s: closed, next %s", now, got.Next)
		}
	}
}
