package plugin

import "testing"

func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		name, in, text, cell string
	}{
		{"plain text", "v2 takes 40% of the traffic", "v2 takes 40% of the traffic", "v2 takes 40% of the traffic"},
		{"unicode stays", "déployé → 40 % 🚀", "déployé → 40 % 🚀", "déployé → 40 % 🚀"},
		{"clear the screen", "a\x1b[2Jb\x1b[H\x1b[2Jc", "abc", "abc"},
		{"colours and cursor moves", "\x1b[1;31mred\x1b[0m \x1b[10A\x1b[?25lup", "red up", "red up"},
		{"a window title, ended by BEL", "a\x1b]0;evil\x07b", "ab", "ab"},
		{"a window title, ended by ST", "a\x1b]2;evil\x1b\\b", "ab", "ab"},
		{"a hyperlink", "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\", "click", "click"},
		{"a device control string", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab", "ab"},
		{"a charset switch", "a\x1b(0lqk\x1b(Bb", "alqkb", "alqkb"},
		{"two-character sequences", "a\x1bcb\x1b7c\x1b8d", "abcd", "abcd"},
		{"an OSC never ended shows what follows", "a\x1b]0;title", "a0;title", "a0;title"},
		{"a lone ESC at the end", "a\x1b", "a", "a"},
		{"C0 controls", "a\x00b\x07c\x08d\x0be\x0cf\x7fg", "abcdefg", "abcdefg"},
		{"newlines, tabs and carriage returns", "a\nb\tc\rd", "a\nb c d", "a b c d"},
		{"8-bit CSI and OSC as runes", "a\u009b2Jb\u009d0;evil\u009cc\u0085d", "abcd", "abcd"},
		{"8-bit CSI as a lone byte", "a\x9b2Jb", "a\uFFFD2Jb", "a\uFFFD2Jb"},
		{"bidirectional overrides", "a\u202eevil\u202cb\u2066c\u2069", "aevilbc", "aevilbc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Printable(tc.in); got != tc.text {
				t.Errorf("Printable(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := cell(tc.in); got != tc.cell {
				t.Errorf("cell(%q) = %q, want %q", tc.in, got, tc.cell)
			}
		})
	}
}
