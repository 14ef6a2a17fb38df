package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// daemonStopTimeout is how long a daemon gets to exit after SIGTERM before
// it is killed.
const daemonStopTimeout = 15 * time.Second

// daemon is a process of the fleet that outlives the command that started
// it (Prometheus, the mesh, the operator): it runs in its own session, logs
// to <dir>/logs/<name>.log and is found again through <dir>/pids/<name>.pid.
type daemon struct {
	dir, name string
}

func (d daemon) pidFile() string { return filepath.Join(d.dir, "pids", d.name+".pid") }

// LogFile is where the daemon's output goes.
func (d daemon) LogFile() string { return filepath.Join(d.dir, "logs", d.name+".log") }

// start starts argv detached, with extra environment variables, and records
// its pid. It fails when the daemon runs already.
func (d daemon) start(argv []string, env ...string) error {
	if pid, ok := d.running(); ok {
		return fmt.Errorf("starting %s: already running as pid %d", d.name, pid)
	}
	for _, sub := range []string{"pids", "logs"} {
		if err := os.MkdirAll(filepath.Join(d.dir, sub), 0o755); err != nil {
			return fmt.Errorf("starting %s: %w", d.name, err)
		}
	}
	log, err := os.OpenFile(d.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting %s: opening its log: %w", d.name, err)
	}
	defer log.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	// A session of its own: Ctrl-C on the terminal that started it does not
	// reach it, and it survives the end of that command.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s (%s): %w", d.name, argv[0], err)
	}
	pid := cmd.Process.Pid
	// Reaped when it exits while this process lives; reparented to init
	// when this process ends first.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(d.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return errors.Join(fmt.Errorf("starting %s: recording its pid: %w", d.name, err), killPid(pid))
	}
	// Until the child has exec'd its command, /proc shows this process's
	// command line, and running would not know it: return once it runs.
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, daemonStopTimeout, true,
		func(context.Context) (bool, error) { return alive(pid, d.dir), nil }); err != nil {
		return fmt.Errorf("starting %s (%s): not running its command (see %s): %w", d.name, argv[0], d.LogFile(), err)
	}
	return nil
}

// running returns the daemon's pid when its recorded process is alive and
// still runs the same program (a pid can be reused once it has exited).
func (d daemon) running() (int, bool) {
	data, err := os.ReadFile(d.pidFile())
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, alive(pid, d.dir)
}

// alive says whether pid runs and mentions dir on its command line (every
// daemon of a fleet is given paths inside the fleet's directory), which
// tells it from an unrelated process that reused the pid. A zombie (exited,
// not yet reaped by its parent) is not alive.
func alive(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(cmdline) == 0 {
		return false
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The state follows the command name in parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	return bytes.Contains(cmdline, []byte(dir))
}

// stop stops the daemon (SIGTERM, then SIGKILL after daemonStopTimeout)
// and removes its pid file. A daemon that is not running is not an error.
func (d daemon) stop() error {
	pid, ok := d.running()
	if ok {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stopping %s (pid %d): %w", d.name, pid, err)
		}
		// A process this one did not start cannot be waited for: poll.
		_ = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, daemonStopTimeout, true,
			func(context.Context) (bool, error) { return !alive(pid, d.dir), nil })
		if alive(pid, d.dir) {
			if err := errors.Join(killPid(pid), awaitExit(pid, d.dir)); err != nil {
				return fmt.Errorf("stopping %s: %w", d.name, err)
			}
		}
	}
	if err := os.Remove(d.pidFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	return nil
}

// awaitExit waits until pid, killed, no longer runs a command of dir.
func awaitExit(pid int, dir string) error {
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, daemonStopTimeout, true,
		func(context.Context) (bool, error) { return !alive(pid, dir), nil }); err != nil {
		return fmt.Errorf("pid %d still runs %s after SIGKILL: %w", pid, daemonStopTimeout, err)
	}
	return nil
}

func killPid(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing pid %d: %w", pid, err)
	}
	return nil
}
