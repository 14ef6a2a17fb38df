package story

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
)

// View shows the story as it runs: on a terminal, a table per cluster of
// builds, states, weights and pods, redrawn in place; otherwise a log line
// each time what it shows changes. It is safe for concurrent use.
type View struct {
	out   io.Writer
	tty   bool
	start time.Time

	mu    sync.Mutex
	drawn int    // lines of the table on screen (terminal)
	last  string // last line logged (plain)
}

// NewView returns a view on out, redrawn in place when out is a terminal.
func NewView(out *os.File) *View {
	return &View{out: out, tty: term.IsTerminal(int(out.Fd())), start: time.Now()}
}

// NewPlainView returns a view that logs lines to out.
func NewPlainView(out io.Writer) *View {
	return &View{out: out, start: time.Now()}
}

// Printf prints a message; on a terminal, above the table.
func (v *View) Printf(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	fmt.Fprintf(v.out, format+"\n", args...)
}

// Show shows a snapshot taken during phase.
func (v *View) Show(phase string, s Snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	elapsed := s.At.Sub(v.start).Round(100 * time.Millisecond)
	if !v.tty {
		line := plainLine(phase, s)
		if line != v.last {
			v.last = line
			fmt.Fprintf(v.out, "[%7s] %s\n", elapsed, line)
		}
		return
	}
	table := Table(phase, elapsed, s)
	v.clear()
	fmt.Fprint(v.out, table)
	v.drawn = strings.Count(table, "\n")
}

// clear erases the table drawn last (terminal).
func (v *View) clear() {
	if v.tty && v.drawn > 0 {
		// Up to the table's first line, then erase to the end of the screen.
		fmt.Fprintf(v.out, "\x1b[%dA\x1b[J", v.drawn)
		v.drawn = 0
	}
}

// Table renders a snapshot as a table: a row per build, with its state and,
// per cluster, its weight and its Running pods of those wanted.
func Table(phase string, elapsed time.Duration, s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "── %s · %s ──\n", phase, elapsed)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	header := "BUILD\tSTATE"
	for _, c := range s.Clusters {
		header += "\t" + strings.ToUpper(c.Name) + " WEIGHT\tPODS"
	}
	fmt.Fprintln(w, header)
	for _, build := range s.Builds {
		state := build.State
		if build.Failed {
			state += " (failed)"
		}
		row := build.Tag + "\t" + state
		for _, c := range s.Clusters {
			p := c.Pods[build.Tag]
			row += fmt.Sprintf("\t%d %%\t%d/%d", c.Weights[build.Tag], p.Running, p.Desired)
		}
		fmt.Fprintln(w, row)
	}
	if len(s.Builds) == 0 {
		fmt.Fprintln(w, "(no builds yet)")
	}
	_ = w.Flush()
	for _, c := range s.Clusters {
		if c.Err != nil {
			fmt.Fprintf(&b, "%s: %v\n", c.Name, c.Err)
		}
	}
	if s.Err != nil {
		fmt.Fprintf(&b, "delivery: %v\n", s.Err)
	}
	return b.String()
}

// plainLine is a snapshot on one line, for logs.
func plainLine(phase string, s Snapshot) string {
	var parts []string
	for _, b := range s.Builds {
		state := b.State
		if b.Failed {
			state += "(failed)"
		}
		parts = append(parts, b.Tag+" "+state)
	}
	if len(parts) == 0 {
		parts = append(parts, "no builds yet")
	}
	line := phase + ": " + strings.Join(parts, ", ")
	for _, c := range s.Clusters {
		if c.Err != nil {
			line += fmt.Sprintf(" | %s unreachable", c.Name)
			continue
		}
		var pods []string
		for _, b := range s.Builds {
			if p, ok := c.Pods[b.Tag]; ok && p.Desired+p.Running > 0 {
				pods = append(pods, fmt.Sprintf("%s %d/%d", b.Tag, p.Running, p.Desired))
			}
		}
		line += fmt.Sprintf(" | %s routes %s pods %s", c.Name, orNone(c.Routes()), orNone(strings.Join(pods, " ")))
	}
	return line
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
