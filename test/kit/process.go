package kit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processLogLines is how many of the last lines of a process's log an
// error quotes.
const processLogLines = 40

// ProcessSpec says how to run a child process of the test.
type ProcessSpec struct {
	// Name says what the process is, in errors.
	Name string
	// Argv is the binary and its arguments.
	Argv []string
	// Env is added to this process's environment.
	Env []string
	// Dir is the working directory (this process's when empty).
	Dir string
	// Log is the file the output goes to: truncated, unless AppendLog.
	Log       string
	AppendLog bool
	// Tee, when set, receives the output too.
	Tee io.Writer
}

// Process is a child process of the test, with its output in a log file.
// It lives as long as the test process at most; the local fleet's daemons,
// which outlive the command that starts them, are test/e2e/fleet's.
type Process struct {
	spec ProcessSpec
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed once the process has exited
	err  error         // cmd.Wait's result, set before done is closed
}

// StartProcess starts the process spec describes.
func StartProcess(spec ProcessSpec) (*Process, error) {
	if len(spec.Argv) == 0 {
		return nil, fmt.Errorf("starting %s: no command", spec.Name)
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if spec.AppendLog {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	log, err := os.OpenFile(spec.Log, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("starting %s: opening its log: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	var out io.Writer = log
	if spec.Tee != nil {
		out = io.MultiWriter(log, spec.Tee)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting %s: %w", spec.Name, err), log.Close())
	}
	p := &Process{spec: spec, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Name is the process's name.
func (p *Process) Name() string { return p.spec.Name }

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// LogTail returns the last lines of the process's log.
func (p *Process) LogTail() string {
	return "log tail:\n" + LogTail(p.spec.Log, processLogLines)
}

// Err is cmd.Wait's result once the process has exited (nil for status
// 0), and nil while it runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// CPU is the processor time (user and system) the process has used so far,
// or in all once it has exited. Linux only: a running process's is read
// from /proc/<pid>/stat.
func (p *Process) CPU() (time.Duration, error) {
	select {
	case <-p.done:
		state := p.cmd.ProcessState
		return state.UserTime() + state.SystemTime(), nil
	default:
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of %s: %w", p.spec.Name, err)
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: utime and stime are the 12th and 13th of them.
	stat := string(b)
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("reading the CPU time of %s: short /proc stat %q", p.spec.Name, stat)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU time of %s: %w", p.spec.Name, err)
		}
		ticks += n
	}
	// In clock ticks of USER_HZ, 100 a second on every Linux Go runs on.
	return time.Duration(ticks) * (time.Second / 100), nil
}

// Exited returns an error with the log's tail when the process has exited,
// nil while it runs.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v): %s", p.spec.Name, p.err, p.LogTail())
	default:
		return nil
	}
}

// Stop sends SIGTERM, kills the process when it has not exited timeout
// later, and waits for it to exit. It reports a process that had exited by
// itself, or had to be killed.
func (p *Process) Stop(timeout time.Duration) error {
	var errs []error
	if err := p.Exited(); err != nil {
		errs = append(errs, fmt.Errorf("stopping: %w", err))
	} else {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("stopping %s: %w", p.spec.Name, err))
		}
		timer := time.NewTimer(timeout)
		select {
		case <-p.done:
			timer.Stop()
		case <-timer.C:
			errs = append(errs, fmt.Errorf("stopping %s: still running %s after SIGTERM; killing it: %s",
				p.spec.Name, timeout, p.LogTail()))
			if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, fmt.Errorf("killing %s: %w", p.spec.Name, err))
			}
			<-p.done
		}
	}
	if err := p.log.Close(); err != nil {
		errs = append(errs, fmt.Errorf("closing the log of %s: %w", p.spec.Name, err))
	}
	return errors.Join(errs...)
}
