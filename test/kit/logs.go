package kit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// logTailBytes bounds how much of a log LogTail reads.
const logTailBytes = 64 << 10

// LogTail returns the last lines of the log at path (at most the last 64
// KiB of it), to explain a failure, or why it cannot be read.
func LogTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	offset := max(info.Size()-logTailBytes, 0)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	tail := string(buf)
	if offset > 0 {
		// Drop the first, partial line.
		if i := strings.IndexByte(tail, '\n'); i >= 0 {
			tail = tail[i+1:]
		}
	}
	return LastLines(tail, lines)
}

// LastLines returns the last n lines of s, trimmed of blank space at its ends.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
