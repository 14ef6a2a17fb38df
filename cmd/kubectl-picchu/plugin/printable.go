package plugin

import (
	"strings"
	"unicode/utf8"
)

// Printable is text that came from the cluster (an event's message, a
// condition's, an annotation, an API server's error) made safe to print
// on a terminal: without the control characters and escape sequences that
// would let whoever wrote it clear the screen, move the cursor, rewrite
// what was printed, set the window's title or hide text. It drops the C0
// controls (a newline stays; a tab or carriage return prints as a space),
// DEL, the C1 controls, whole ESC sequences (CSI, OSC and the other string
// sequences, two-character ones) and their 8-bit forms, and the Unicode
// bidirectional embeddings, overrides and isolates that reorder what is
// shown. A byte that is not UTF-8 prints as U+FFFD.
func Printable(s string) string { return printable(s, true) }

// cell is s as one cell of a table, or a value on a line of its own: as
// Printable, newlines too printing as spaces.
func cell(s string) string { return printable(s, false) }

// Code points of the control sequences printable drops.
const (
	esc = 0x1b
	bel = 0x07
	// The 8-bit (C1) introducers and terminator, as runes.
	c1DCS = 0x90
	c1SOS = 0x98
	c1CSI = 0x9b
	c1ST  = 0x9c
	c1OSC = 0x9d
	c1PM  = 0x9e
	c1APC = 0x9f
)

func printable(s string, keepNewlines bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// A lone byte: in an 8-bit terminal, 0x9b is a CSI.
			b.WriteRune(utf8.RuneError)
		case r == esc:
			i = skipEscape(s, i)
			continue
		case r == c1CSI:
			i = skipCSI(s, i+size)
			continue
		case r == c1OSC || r == c1DCS || r == c1SOS || r == c1PM || r == c1APC:
			i = skipString(s, i+size)
			continue
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			// Bidirectional embeddings, overrides and isolates.
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// skipEscape returns the index after the ESC sequence at s[i].
func skipEscape(s string, i int) int {
	j := i + 1
	if j >= len(s) {
		return j
	}
	switch c := s[j]; {
	case c == '[':
		return skipCSI(s, j+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_':
		return skipString(s, j+1)
	case c >= 0x20 && c <= 0x2f:
		// Intermediate bytes, then a final one (such as ESC ( B).
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
			j++
		}
		return j
	case c >= 0x30 && c <= 0x7e:
		return j + 1
	}
	return j
}

// skipCSI returns the index after a control sequence whose parameters
// start at s[j]: parameter and intermediate bytes, then a final byte. One
// cut short ends before the first byte that cannot be part of it.
func skipCSI(s string, j int) int {
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
		j++
	}
	return j
}

// skipString returns the index after a string sequence (OSC, DCS, SOS, PM,
// APC) whose content starts at s[j], ended by BEL, ESC \ or ST. One never
// ended drops only its introducer: a terminal would swallow what follows,
// which is better shown.
func skipString(s string, j int) int {
	for k := j; k < len(s); {
		r, size := utf8.DecodeRuneInString(s[k:])
		switch {
		case r == bel || r == c1ST:
			return k + size
		case r == esc && k+1 < len(s) && s[k+1] == '\\':
			return k + 2
		}
		k += size
	}
	return j
}
