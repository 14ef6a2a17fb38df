package schedule

import (
	"fmt"
	"time"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Freeze is what a cluster's freeze windows say at one time.
type Freeze struct {
	// Open says a window is open: Name is the window, Until when the open
	// windows (one running into the next) close. An unreadable window is
	// open, with no end, and Err says why.
	Open  bool
	Name  string
	Until time.Time
	Err   error
	// Next is when a window next opens, while none is open (zero when
	// none will in the week ahead).
	Next time.Time
}

// String is how the freeze is shown in a Cluster's status.frozen: "" when
// no window is open.
func (f Freeze) String() string {
	switch {
	case !f.Open:
		return ""
	case f.Err != nil:
		return fmt.Sprintf("%s: %v", f.Name, f.Err)
	}
	return fmt.Sprintf("%s until %s", f.Name, f.Until.UTC().Format(time.RFC3339))
}

// Due is when the freeze needs looking at again: when it closes, or when
// the next window opens.
func (f Freeze) Due() time.Time {
	if f.Open {
		return f.Until
	}
	return f.Next
}

// span is one opening of a window.
type span struct {
	name       string
	start, end time.Time
}

// weekdays reads a weekly window's day names.
var weekdays = map[string]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// Frozen says whether windows hold a cluster at now. A weekly window opens
// at its local from on each of its days and closes at its local to (the
// next day when to is not after from), in its time zone, so daylight saving
// time moves it with the clocks; a local time the clocks skip (02:30 when
// 02:00 becomes 03:00) is read at the offset after the change, so that
// day's window keeps its length. Windows that touch or overlap make one freeze,
// until the last of them closes.
func Frozen(windows []picchuv1alpha1.FreezeWindow, now time.Time) Freeze {
	var spans []span
	for _, w := range windows {
		ws, err := openings(w, now)
		if err != nil {
			return Freeze{Open: true, Name: w.Name, Err: err}
		}
		spans = append(spans, ws...)
	}
	out := Freeze{}
	for _, s := range spans {
		switch {
		case !s.start.After(now) && now.Before(s.end):
			if !out.Open || s.end.After(out.Until) {
				out.Open, out.Name, out.Until = true, s.name, s.end
			}
		case s.start.After(now) && (out.Next.IsZero() || s.start.Before(out.Next)):
			out.Next = s.start
		}
	}
	if !out.Open {
		return out
	}
	out.Next = time.Time{}
	// A window that opens before the freeze closes extends it.
	for extended := true; extended; {
		extended = false
		for _, s := range spans {
			if !s.start.After(out.Until) && s.end.After(out.Until) {
				out.Until, extended = s.end, true
			}
		}
	}
	return out
}

// openings are the openings of window w around now: a one-off window's
// one, a weekly window's from a day before now to a week after.
func openings(w picchuv1alpha1.FreezeWindow, now time.Time) ([]span, error) {
	if w.Weekly == nil {
		if w.Start == nil || w.End == nil {
			return nil, fmt.Errorf("neither start and end nor weekly")
		}
		return []span{{w.Name, w.Start.Time, w.End.Time}}, nil
	}
	wk := w.Weekly
	loc := time.UTC
	if wk.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(wk.TimeZone); err != nil {
			return nil, fmt.Errorf("weekly.timeZone %q: %w", wk.TimeZone, err)
		}
	}
	fromH, fromM, err := clock(wk.From)
	if err != nil {
		return nil, fmt.Errorf("weekly.from: %w", err)
	}
	toH, toM, err := clock(wk.To)
	if err != nil {
		return nil, fmt.Errorf("weekly.to: %w", err)
	}
	days := map[time.Weekday]bool{}
	for _, d := range wk.Days {
		wd, ok := weekdays[d]
		if !ok {
			return nil, fmt.Errorf("weekly.days: %q is not a day (Mon to Sun)", d)
		}
		days[wd] = true
	}
	overnight := toH*60+toM <= fromH*60+fromM
	local := now.In(loc)
	var out []span
	for offset := -1; offset <= 7; offset++ {
		y, m, d := local.AddDate(0, 0, offset).Date()
		day := time.Date(y, m, d, 12, 0, 0, 0, loc)
		if len(days) > 0 && !days[day.Weekday()] {
			continue
		}
		endDay := d
		if overnight {
			endDay++
		}
		out = append(out, span{w.Name, time.Date(y, m, d, fromH, fromM, 0, 0, loc), time.Date(y, m, endDay, toH, toM, 0, 0, loc)})
	}
	return out, nil
}

// clock reads "HH:MM".
func clock(s string) (hour, minute int, err error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return t.Hour(), t.Minute(), nil
}
