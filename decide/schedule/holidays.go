package schedule

import (
	"time"

	"github.com/rickar/cal/v2"
	"github.com/rickar/cal/v2/us"
)

// weekendAlt observes a holiday that falls on a Saturday on the Friday
// before, and one on a Sunday on the Monday after, as us.Holidays do.
var weekendAlt = []cal.AltDay{
	{Day: time.Saturday, Offset: -1},
	{Day: time.Sunday, Offset: 1},
}

var (
	christmasEve = &cal.Holiday{
		Name:     "Christmas Eve",
		Type:     cal.ObservanceOther,
		Month:    time.December,
		Day:      24,
		Observed: weekendAlt,
		Func:     cal.CalcDayOfMonth,
	}
	newYearsEve = &cal.Holiday{
		Name:     "New Year's Eve",
		Type:     cal.ObservanceOther,
		Month:    time.December,
		Day:      31,
		Observed: weekendAlt,
		Func:     cal.CalcDayOfMonth,
	}
)

// holidays is the company calendar: the US federal holidays without Columbus
// Day and Veterans Day, plus the day after Thanksgiving, Christmas Eve and
// New Year's Eve.
func holidays() []*cal.Holiday {
	return []*cal.Holiday{
		us.NewYear,
		us.MlkDay,
		us.PresidentsDay,
		us.MemorialDay,
		us.Juneteenth,
		us.IndependenceDay,
		us.LaborDay,
		us.ThanksgivingDay,
		us.DayAfterThanksgivingDay,
		christmasEve,
		us.ChristmasDay,
		newYearsEve,
	}
}

// newHolidayCalendar builds the calendar. It is not cacheable: the cache is
// an unguarded map, and a Calendar is shared by concurrent reconciles.
func newHolidayCalendar() *cal.Calendar {
	return &cal.Calendar{Name: "picchu", Holidays: holidays()}
}
