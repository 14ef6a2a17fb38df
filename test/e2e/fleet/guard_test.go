package fleet

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// guardedChild is the environment variable that makes this test binary a
// guarded fleet's test binary instead: it starts a daemon in the fleet
// directory the variable names, arms Guard as the variable's mode says,
// and blocks until Guard ends it.
const guardedChild = "PICCHU_FLEET_GUARDED_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(guardedChild); v != "" {
		os.Exit(guardedFleet(v))
	}
	os.Exit(m.Run())
}

// guardedFleet runs as the child: mode:dir.
func guardedFleet(v string) int {
	mode, dir, _ := strings.Cut(v, ":")
	if err := (daemon{dir, prometheusDaemon}).start(sleeper(dir)); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 3
	}
	timeout := time.Duration(0)
	if mode == "timeout" {
		timeout = 3 * time.Second
	}
	Guard(timeout, os.Stderr, func(ctx context.Context) error { return Down(ctx, dir) })
	os.Stdout.WriteString("armed\n")
	select {}
}

// A test binary that reaches go test's -timeout, or is interrupted, takes
// its fleet down before it ends: no process of the fleet and no file is
// left, and it ends with status 1, saying why (near the timeout, with every
// goroutine's stack).
func TestGuard_TakesTheFleetDownBeforeTheProcessEnds(t *testing.T) {
	for _, tc := range []struct {
		mode, says string
		signal     os.Signal
	}{
		{mode: "timeout", says: "go test's -timeout 3s ends in 300ms"},
		{mode: "interrupt", says: "interrupted (interrupt)", signal: os.Interrupt},
		{mode: "interrupt", says: "interrupted (terminated)", signal: syscall.SIGTERM},
	} {
		t.Run(tc.says, func(t *testing.T) {
			dir := t.TempDir() + "/fleet"
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), guardedChild+"="+tc.mode+":"+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = Down(context.Background(), dir) })
			armed := make([]byte, len("armed\n"))
			if _, err := stdout.Read(armed); err != nil || string(armed) != "armed\n" {
				t.Fatalf("the child did not arm its guard: %q, %v; stderr:\n%s", armed, err, stderr.String())
			}
			if pids, err := Processes(dir); err != nil || len(pids) == 0 {
				t.Fatalf("the fleet's daemon is not running: %v, %v", pids, err)
			}
			if tc.signal != nil {
				if err := cmd.Process.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the child ended with %v, want status 1; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("stderr does not say %q:\n%s", tc.says, stderr.String())
			}
			// The child's main goroutine waits in guardedFleet.
			if stacks := strings.Contains(stderr.String(), "fleet.guardedFleet("); stacks != (tc.mode == "timeout") {
				t.Errorf("goroutines printed: %v, want %v", stacks, tc.mode == "timeout")
			}
			// Down waits for every process to end before it returns.
			if pids, err := Processes(dir); err != nil || len(pids) > 0 {
				t.Errorf("processes of the fleet left: %v, %v", pids, err)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s left (%v)", dir, err)
			}
		})
	}
}
