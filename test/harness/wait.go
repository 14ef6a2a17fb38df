package harness

import (
	"testing"
	"time"
)

// Eventually polls check every 100ms until it returns nil, and fails the
// test with check's last error when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		<-tick.C
	}
}
