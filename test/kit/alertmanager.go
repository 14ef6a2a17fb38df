package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// alertmanagerReadyTimeout bounds the wait for a started Alertmanager
	// to be ready.
	alertmanagerReadyTimeout = time.Minute
	// alertmanagerStopTimeout is how long Close waits after SIGTERM before
	// it kills the process.
	alertmanagerStopTimeout = 10 * time.Second
	// alertmanagerStartAttempts is how many free ports StartAlertmanager
	// tries, in case another process takes the one it picked first.
	alertmanagerStartAttempts = 3
)

// alertmanagerConfig routes every alert to a receiver that sends nothing.
const alertmanagerConfig = `route:
  receiver: "null"
receivers:
- name: "null"
`

var (
	alertmanagerOnce   sync.Once
	alertmanagerBinary string
	alertmanagerErr    error
)

// AlertmanagerBinary returns the path of the Alertmanager the tests run,
// provisioned once per process by hack/install-alertmanager.sh (which
// reuses the binary of an earlier run under bin/alertmanager).
func AlertmanagerBinary(ctx context.Context) (string, error) {
	alertmanagerOnce.Do(func() {
		alertmanagerBinary, alertmanagerErr = provision(ctx, "install-alertmanager.sh", "Alertmanager")
	})
	return alertmanagerBinary, alertmanagerErr
}

// Alertmanager is an Alertmanager run by a test, on a loopback port, with
// its configuration (one null receiver), data and log in a temporary
// directory, clustering off.
type Alertmanager struct {
	dir  string
	port int
	proc *Process
}

// StartAlertmanager provisions Alertmanager if needed, starts it on a free
// loopback port and waits until /-/ready answers; it is stopped, and its
// directory removed, when the test ends. It fails the test, saying why and
// how to provision it, when it cannot.
func StartAlertmanager(ctx context.Context, t testing.TB) *Alertmanager {
	t.Helper()
	a, err := NewAlertmanager(ctx)
	if err != nil {
		t.Fatalf("starting Alertmanager (make alertmanager-binary, or hack/install-alertmanager.sh, provisions it): %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("stopping Alertmanager: %v", err)
		}
	})
	return a
}

// NewAlertmanager is StartAlertmanager for callers without a test (a
// TestMain): Close it when done.
func NewAlertmanager(ctx context.Context) (*Alertmanager, error) {
	binary, err := AlertmanagerBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "picchu-alertmanager-")
	if err != nil {
		return nil, fmt.Errorf("creating its directory: %w", err)
	}
	a := &Alertmanager{dir: dir}
	config := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(config, []byte(alertmanagerConfig), 0o644); err != nil {
		return nil, errors.Join(fmt.Errorf("writing %s: %w", config, err), a.Close())
	}
	for attempt := 1; ; attempt++ {
		if a.port, err = FreePort(); err != nil {
			return nil, errors.Join(err, a.Close())
		}
		err = a.start(ctx, binary, config)
		if err == nil {
			return a, nil
		}
		if attempt == alertmanagerStartAttempts || !strings.Contains(err.Error(), "address already in use") {
			return nil, errors.Join(err, a.Close())
		}
	}
}

func (a *Alertmanager) start(ctx context.Context, binary, config string) error {
	proc, err := StartProcess(ProcessSpec{
		Name: "Alertmanager at " + a.URL(),
		Argv: []string{binary,
			"--config.file=" + config,
			"--storage.path=" + filepath.Join(a.dir, "data"),
			"--web.listen-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.port)),
			"--cluster.listen-address=", // no gossip: a single Alertmanager
		},
		Dir: a.dir, Log: a.logPath(), AppendLog: true,
	})
	if err != nil {
		return err
	}
	a.proc = proc
	httpClient := &http.Client{Timeout: 5 * time.Second}
	err = Poll(ctx, prometheusPollInterval, alertmanagerReadyTimeout, "Alertmanager at "+a.URL()+" ready", func(ctx context.Context) error {
		select {
		case <-proc.Done():
			return fmt.Errorf("exited: %w", proc.Exited())
		default:
		}
		return getOK(ctx, httpClient, a.URL()+"/-/ready")
	})
	if err != nil {
		stopErr := proc.Stop(alertmanagerStopTimeout)
		a.proc = nil
		return errors.Join(fmt.Errorf("%w: log tail:\n%s", err, LogTail(a.logPath(), 40)), stopErr)
	}
	return nil
}

// getOK fails unless GET url answers 200.
func getOK(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// URL is the base URL of Alertmanager, http://127.0.0.1:<port>.
func (a *Alertmanager) URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(a.port))
}

func (a *Alertmanager) logPath() string { return filepath.Join(a.dir, "alertmanager.log") }

// LogTail returns the last lines of Alertmanager's log, to explain a failure.
func (a *Alertmanager) LogTail() string { return LogTail(a.logPath(), 40) }

// Close stops Alertmanager and removes its directory.
func (a *Alertmanager) Close() error {
	var err error
	if a.proc != nil {
		err = a.proc.Stop(alertmanagerStopTimeout)
		a.proc = nil
	}
	if rmErr := os.RemoveAll(a.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("removing the directory of Alertmanager: %w", rmErr))
	}
	return err
}
