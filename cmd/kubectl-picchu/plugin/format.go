package plugin

import (
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
)

// none is what a table shows for an empty value, as kubectl does.
const none = "<none>"

// table writes rows aligned the way kubectl does, each line after indent.
type table struct {
	w      io.Writer
	indent string
	rows   [][]string
}

func newTable(w io.Writer, indent string, header ...string) *table {
	return &table{w: w, indent: indent, rows: [][]string{header}}
}

// add adds a row. Every cell is printed as cell makes it: most come from
// the cluster, and a tab, a newline or an escape sequence in one would
// break the table or take over the terminal.
func (t *table) add(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = cell(c)
	}
	t.rows = append(t.rows, row)
}

// flush writes the rows; an error is the writer's.
func (t *table) flush() error {
	tw := printers.GetNewTabWriter(t.w)
	for _, row := range t.rows {
		if _, err := fmt.Fprintln(tw, t.indent+strings.Join(row, "\t")); err != nil {
			return fmt.Errorf("writing a table: %w", err)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing a table: %w", err)
	}
	return nil
}

// since is how long ago t was, as kubectl writes ages.
func since(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// orNone is s, or <none> when empty.
func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// joined is the values comma-joined, or <none>.
func joined(values []string) string {
	return orNone(strings.Join(values, ","))
}

func percent(p int32) string { return fmt.Sprintf("%d%%", p) }
