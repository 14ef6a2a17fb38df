package prometheus

import (
	"strings"
	"unicode/utf8"
)

// quote returns s as a PromQL double-quoted string literal, which unquotes to
// exactly s. PromQL strings escape like Go's: a backslash, a double quote and
// control characters and U+FFFD (which the PromQL lexer takes for invalid
// UTF-8) are escaped, other valid UTF-8 is written as is, and each byte of
// invalid UTF-8 becomes a \x escape.
func quote(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\x`)
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0xf])
			i++
			continue
		}
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			// The lexer takes a literal U+FFFD for invalid UTF-8.
			b.WriteString(`\ufffd`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}
