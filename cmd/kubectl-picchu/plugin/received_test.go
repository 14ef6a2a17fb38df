package plugin

import (
	"strings"
	"testing"
	"time"
)

func TestReceivedWarning(t *testing.T) {
	said := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, received, want string
	}{
		{"no stamp", "", "no webhook stamped when the request was received: Picchu orders it by this machine's clock (2026-11-25T10:00:00Z)"},
		{"a slow clock", "2026-11-25T10:10:00Z", "this machine's clock is 10m0s behind Picchu's: the request is ordered by when Picchu received it, 2026-11-25T10:10:00Z"},
		{"a fast clock", "2026-11-25T09:58:00Z", "this machine's clock is 2m0s ahead of Picchu's"},
		{"clocks that agree", "2026-11-25T10:00:30.5Z", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := receivedWarning(said, tc.received)
			if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
				t.Errorf("receivedWarning = %q, want %q", got, tc.want)
			}
		})
	}
}
