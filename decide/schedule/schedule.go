package schedule

import (
	"fmt"
	"time"
	// Embed the tz database so America/Los_Angeles loads on images without
	// /usr/share/zoneinfo (distroless, scratch).
	_ "time/tzdata"

	"github.com/rickar/cal/v2"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

const (
	// zone is the one time zone every rule is read in.
	zone = "America/Los_Angeles"
	// humaneStart is the hour a humane window opens.
	humaneStart = 7
	// humaneEnd is the hour a humane window closes on an ordinary weekday.
	humaneEnd = 16
	// humaneEarlyEnd is the hour it closes on Fridays and before a holiday.
	humaneEarlyEnd = 14
	// searchDays bounds NextWindow's search.
	searchDays = 14
)

// Calendar decides release windows. Build it once with New; it is safe for
// concurrent use.
type Calendar struct {
	la       *time.Location
	holidays *cal.Calendar
	// humaneEnabled is false when the kill switch is on: only the schedule
	// "always" releases.
	humaneEnabled bool
}

// New returns a Calendar. humaneReleasesEnabled=false is the kill switch of
// --humane-releases-enabled: it blocks every schedule except "always".
func New(humaneReleasesEnabled bool) (*Calendar, error) {
	la, err := time.LoadLocation(zone)
	if err != nil {
		return nil, fmt.Errorf("load time zone %s: %w", zone, err)
	}
	return &Calendar{la: la, holidays: newHolidayCalendar(), humaneEnabled: humaneReleasesEnabled}, nil
}

// normalize maps a schedule to one of the three known ones. As in the
// original, an empty string is the default (inhumane) and any other string
// behaves as always: admission accepts one, with a warning, as the
// original did.
func normalize(s picchuv1alpha1.Schedule) picchuv1alpha1.Schedule {
	switch s {
	case "":
		return picchuv1alpha1.ScheduleInhumane
	case picchuv1alpha1.ScheduleHumane, picchuv1alpha1.ScheduleInhumane:
		return s
	default:
		return picchuv1alpha1.ScheduleAlways
	}
}

// Permits says whether a release on schedule s may start at t.
//
// The kill switch lets only the exact string "always" through, so an unknown
// string, which otherwise behaves as always, is blocked by it too.
func (c *Calendar) Permits(s picchuv1alpha1.Schedule, t time.Time) bool {
	if !c.humaneEnabled && s != picchuv1alpha1.ScheduleAlways {
		return false
	}
	s = normalize(s)
	if s == picchuv1alpha1.ScheduleAlways {
		return true
	}
	local := t.In(c.la)
	if !c.isWorkday(local) {
		return false
	}
	if s == picchuv1alpha1.ScheduleInhumane {
		return true
	}
	h := local.Hour()
	return h >= humaneStart && h < c.humaneEnd(local)
}

// CanRelease is the whole rule for entering releasing: the revision was
// previously released past the canary, or its schedule permits a release at
// its creation time or at now. A zero created time permits nothing by itself.
func (c *Calendar) CanRelease(s picchuv1alpha1.Schedule, peakPercent, canaryPercent int32, created, now time.Time) bool {
	if peakPercent > 0 && peakPercent > canaryPercent {
		return true
	}
	if !created.IsZero() && c.Permits(s, created) {
		return true
	}
	return c.Permits(s, now)
}

// NextWindow returns the earliest instant >= t at which Permits(s, ·) is
// true, so the reconciler can come back exactly then. It looks at most 14
// days ahead; ok is false when nothing opens in that time (the kill switch).
// The result is in t's location.
func (c *Calendar) NextWindow(s picchuv1alpha1.Schedule, t time.Time) (next time.Time, ok bool) {
	if c.Permits(s, t) {
		return t, true
	}
	local := t.In(c.la)
	y, m, d := local.Date()
	open := 0 // inhumane windows open at midnight
	if normalize(s) == picchuv1alpha1.ScheduleHumane {
		open = humaneStart
	}
	// Each day's window is one interval that starts at its opening hour, so
	// the first permitted instant of a day is the later of t and that hour.
	for i := range searchDays + 1 {
		start := time.Date(y, m, d+i, open, 0, 0, 0, c.la)
		if start.Before(t) {
			start = t
		}
		if start.Sub(t) > searchDays*24*time.Hour {
			break
		}
		if c.Permits(s, start) {
			return start.In(t.Location()), true
		}
	}
	return time.Time{}, false
}

// IsHoliday says whether the calendar day of t in America/Los_Angeles is a
// holiday or the day one is observed on.
func (c *Calendar) IsHoliday(t time.Time) bool {
	actual, observed, _ := c.holidays.IsHoliday(t.In(c.la))
	return actual || observed
}

// isWorkday says whether local, an LA time, falls on a weekday that is not a
// holiday.
func (c *Calendar) isWorkday(local time.Time) bool {
	switch local.Weekday() {
	case time.Saturday, time.Sunday:
		return false
	}
	return !c.IsHoliday(local)
}

// humaneEnd is the hour the humane window of local's day closes: early on
// Fridays and on the day before a holiday.
func (c *Calendar) humaneEnd(local time.Time) int {
	if local.Weekday() == time.Friday {
		return humaneEarlyEnd
	}
	y, m, d := local.Date()
	if c.IsHoliday(time.Date(y, m, d+1, 12, 0, 0, 0, c.la)) {
		return humaneEarlyEnd
	}
	return humaneEnd
}

// Closed says why schedule s permits no release at t, in words ("Saturday",
// "holiday Thanksgiving Day", "after 14:00 on a Friday"), or "" when it
// permits one: the reason Permits has, for people reading a forecast.
func (c *Calendar) Closed(s picchuv1alpha1.Schedule, t time.Time) string {
	if c.Permits(s, t) {
		return ""
	}
	if !c.humaneEnabled && s != picchuv1alpha1.ScheduleAlways {
		return "humane releases are turned off (--humane-releases-enabled=false)"
	}
	local := t.In(c.la)
	if actual, observed, h := c.holidays.IsHoliday(local); (actual || observed) && h != nil {
		return "holiday " + h.Name
	}
	switch local.Weekday() {
	case time.Saturday, time.Sunday:
		return local.Weekday().String()
	}
	if local.Hour() < humaneStart {
		return fmt.Sprintf("before %02d:00 %s", humaneStart, zone)
	}
	end := c.humaneEnd(local)
	if end == humaneEarlyEnd && local.Weekday() == time.Friday {
		return fmt.Sprintf("after %02d:00 %s on a Friday", end, zone)
	}
	if end == humaneEarlyEnd {
		return fmt.Sprintf("after %02d:00 %s on the eve of a holiday", end, zone)
	}
	return fmt.Sprintf("after %02d:00 %s", end, zone)
}
