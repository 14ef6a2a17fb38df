package forecast

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// sortLanded orders steps by time, then wave order (kept), then cluster.
func sortLanded(steps []Landed) {
	slices.SortStableFunc(steps, func(a, b Landed) int {
		return a.At.Compare(b.At)
	})
}

// WriteText prints the forecast as people read it: the outcome, every
// step in the order it lands with its time and its distance from now, the
// holds, and what the forecast assumed.
func (f Forecast) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of %s in target %s (fleet %s), %s at %s\n", f.Tag, f.App, f.Target, f.Fleet, f.State, stamp(f.Made))
	switch {
	case f.Outcome == Released && f.Finish != nil:
		fmt.Fprintf(&b, "released at %s, %s from now\n", stamp(*f.Finish), Human(f.Finish.Sub(f.Made)))
	case f.Why != "":
		fmt.Fprintf(&b, "%s: %s\n", f.Outcome, f.Why)
	default:
		fmt.Fprintf(&b, "%s\n", f.Outcome)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nAT\tIN\tWAVE\tCLUSTER\tPERCENT")
	for _, s := range f.Steps() {
		fmt.Fprintf(tw, "%s\t+%s\t%s\t%s\t%d\n", stamp(s.At), Human(s.At.Sub(f.Made)), cmp.Or(s.Wave, "-"), s.Cluster, s.Percent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wave := range f.Waves {
		for _, c := range wave.Clusters {
			if len(c.Steps) == 0 {
				fmt.Fprintf(&b, "%s stays at %d %%\n", c.Name, c.From)
			}
		}
	}
	if len(f.Holds) > 0 {
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nHOLD\tFROM\tUNTIL\tFOR\tWHY")
		for _, h := range f.Holds {
			until, length := "no end", "-"
			if h.Until != nil {
				until, length = stamp(*h.Until), Human(h.Until.Sub(h.From))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Cause, stamp(h.From), until, length, h.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, d := range f.Drains {
		fmt.Fprintf(&b, "%s's pods go at %s, %s after its last route\n", d.Tag, stamp(d.At), d.Delay)
	}
	if len(f.Assumed) > 0 {
		fmt.Fprintf(&b, "\nassumed: %s\n", strings.Join(f.Assumed, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Human prints a duration to the second in days, hours, minutes and
// seconds, leaving out the parts that are zero: "2d3h", "4m10s", "0s".
func Human(d time.Duration) string {
	d = d.Round(time.Second)
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}
