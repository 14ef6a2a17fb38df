package preflight

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		since time.Time
		want  time.Duration
	}{
		{since: time.Time{}, want: MinRetry},
		{since: now, want: MinRetry},
		{since: now.Add(time.Second), want: MinRetry},
		{since: now.Add(-3 * time.Second), want: MinRetry},
		{since: now.Add(-10 * time.Second), want: 10 * time.Second},
		{since: now.Add(-90 * time.Second), want: 90 * time.Second},
		{since: now.Add(-time.Hour), want: MaxRetry},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.since, now); got != tt.want {
			t.Errorf("RetryAfter(now-%s) = %s, want %s", now.Sub(tt.since), got, tt.want)
		}
	}
}

// TestRetryAfter_Doubles: retried at each wait, the checks of a cluster
// that keeps failing are made at 5, 10, 20, 40 … s, then every 5 minutes.
func TestRetryAfter_Doubles(t *testing.T) {
	since := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := since
	var waits []time.Duration
	for range 9 {
		w := RetryAfter(since, at)
		waits = append(waits, w)
		at = at.Add(w)
	}
	want := []time.Duration{5, 5, 10, 20, 40, 80, 160, 300, 300}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v s", waits, want)
		}
	}
}
