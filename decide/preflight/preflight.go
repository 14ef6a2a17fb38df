package preflight

import (
	"fmt"
	"time"
)

// The checks, as conditions and messages name them.
const (
	// Reachable: the cluster answers, its circuit breaker closed.
	Reachable = "reachable"
	// Capacity: its nodes have room for the pods the build waits for.
	Capacity = "capacity"
	// Alerts: none of the alerts its Cluster names fires, and its
	// preflight query returns nothing.
	Alerts = "alerts"
)

// Failure is a check that failed on a cluster: which one, and what it saw.
type Failure struct {
	Check  string
	Detail string
	// Unread says the check could not be made: what it reads could not be
	// read. It holds all the same.
	Unread bool
}

func (f *Failure) Error() string { return fmt.Sprintf("%s: %s", f.Check, f.Detail) }

// Bounds of RetryAfter.
const (
	MinRetry = 5 * time.Second
	MaxRetry = 5 * time.Minute
)

// RetryAfter is how long to wait before checking again a cluster whose
// checks have failed since failingSince: as long as they have failed, at
// least MinRetry and at most MaxRetry, so the waits double while a check
// keeps failing (5 s, 10 s, 20 s, … 5 min). A zero failingSince, or one
// after now, is a check that just failed.
func RetryAfter(failingSince, now time.Time) time.Duration {
	if failingSince.IsZero() || failingSince.After(now) {
		return MinRetry
	}
	return min(max(now.Sub(failingSince), MinRetry), MaxRetry)
}

// Unreachable is the failure of a cluster that cannot be used, for why.
func Unreachable(why string) *Failure {
	return &Failure{Check: Reachable, Detail: why}
}

// Unreadable is the failure of a check whose data could not be read.
func Unreadable(check string, err error) *Failure {
	return &Failure{Check: check, Detail: fmt.Sprintf("cannot be read: %v", err), Unread: true}
}
