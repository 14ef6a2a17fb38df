package fleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"
)

// GuardMargin is how long before a test binary's timeout Guard takes its
// fleet down: a tenth of the timeout, at most two minutes.
func GuardMargin(timeout time.Duration) time.Duration { return min(2*time.Minute, timeout/10) }

// Guard runs down (which takes a test binary's fleet down) when that
// binary is about to end without running its deferred functions: go
// test's -timeout (its panic ends the process at once) or an interrupt
// (Ctrl-C, or SIGTERM). A fleet left running (API servers, etcd, kwok, the
// mesh, the operator) loads the machine for whatever runs next. Near the
// timeout, GuardMargin(timeout) before it, Guard prints every goroutine to
// log first (what the panic would have shown); then it runs down and ends
// the process with status 1. A timeout of 0 is none. The returned func
// disarms Guard: call it before taking the fleet down on the way out.
func Guard(timeout time.Duration, log io.Writer, down func(context.Context) error) (disarm func()) {
	// mu makes fire and disarm exclusive: once disarmed, nothing fires;
	// once fired, disarm waits for the process to end.
	var mu sync.Mutex
	disarmed := false
	fire := func(why string, stacks bool) {
		mu.Lock()
		if disarmed {
			mu.Unlock()
			return
		}
		fmt.Fprintf(log, "e2e: %s: taking the fleet down before this process ends\n", why)
		if stacks {
			_ = pprof.Lookup("goroutine").WriteTo(log, 2)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := down(ctx); err != nil {
			fmt.Fprintf(log, "e2e: taking the fleet down: %v\n", err)
		}
		os.Exit(1)
	}
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout-GuardMargin(timeout), func() {
			fire(fmt.Sprintf("go test's -timeout %s ends in %s; every goroutine follows", timeout, GuardMargin(timeout)), true)
		})
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-signals:
			fire("interrupted ("+s.String()+")", false)
		case <-done:
		}
	}()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		disarmed = true
		if timer != nil {
			timer.Stop()
		}
		signal.Stop(signals)
		close(done)
	}
}
