package kit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultPollInterval is how often Eventually checks.
const DefaultPollInterval = 100 * time.Millisecond

// Poll calls check every interval (at once first) until it returns nil, and
// returns an error naming what and check's last error when timeout passes
// or ctx is done first.
func Poll(ctx context.Context, interval, timeout time.Duration, what string, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%s: not within %s: %w (last: %v)", what, timeout, err, last)
	}
	return nil
}

// Eventually polls check every DefaultPollInterval until it returns nil,
// and fails the test with check's last error when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	if err := Poll(context.Background(), DefaultPollInterval, timeout, what, func(context.Context) error {
		return check()
	}); err != nil {
		t.Fatal(err)
	}
}
