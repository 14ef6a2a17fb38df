package kit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

const (
	// prometheusReadyTimeout bounds the wait for a started Prometheus to be
	// ready, when the caller's context has no earlier deadline.
	prometheusReadyTimeout = 2 * time.Minute
	// prometheusStopTimeout is how long Stop waits after SIGTERM before it
	// kills the process.
	prometheusStopTimeout = 30 * time.Second
	// prometheusPollInterval is how often readiness and rules are polled.
	prometheusPollInterval = 50 * time.Millisecond
	// prometheusStartAttempts is how many free ports StartPrometheus tries,
	// in case another process takes the one it picked before it binds.
	prometheusStartAttempts = 3
)

var (
	prometheusOnce   sync.Once
	prometheusBinary string
	prometheusErr    error
)

// PrometheusBinary returns the path of the Prometheus server the tests run,
// provisioned once per process by hack/install-prometheus.sh (which reuses
// the binary of an earlier run under bin/prometheus).
func PrometheusBinary(ctx context.Context) (string, error) {
	prometheusOnce.Do(func() {
		prometheusBinary, prometheusErr = provision(ctx, "install-prometheus.sh", "Prometheus")
	})
	return prometheusBinary, prometheusErr
}

// PrometheusConfig says what a test Prometheus scrapes and how often.
type PrometheusConfig struct {
	// ScrapeTargets are the host:port addresses of /metrics endpoints,
	// scraped by one job named "traffic".
	ScrapeTargets []string
	// ScrapeInterval is how often the targets are scraped (1s when zero).
	ScrapeInterval time.Duration
	// EvalInterval is how often rules are evaluated (1s when zero).
	EvalInterval time.Duration
}

// Prometheus is a Prometheus server run by a test, listening on a loopback
// port, with its configuration, rules, data and log in a temporary directory.
// Its methods are safe for concurrent use.
type Prometheus struct {
	binary string
	dir    string
	port   int
	http   *http.Client

	mu   sync.Mutex
	proc *Process // nil while stopped
}

// StartPrometheus provisions Prometheus if needed, and starts it on a free
// loopback port with a new temporary directory and the lifecycle API
// enabled, then waits until it is ready. Close it when done.
func StartPrometheus(ctx context.Context, cfg PrometheusConfig) (*Prometheus, error) {
	binary, err := PrometheusBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "picchu-prometheus-")
	if err != nil {
		return nil, fmt.Errorf("starting Prometheus: creating its directory: %w", err)
	}
	p := &Prometheus{binary: binary, dir: dir, http: &http.Client{Timeout: 10 * time.Second}}
	if err := WritePrometheusConfig(dir, cfg); err != nil {
		return nil, errors.Join(err, p.removeDir())
	}
	for attempt := 1; ; attempt++ {
		if p.port, err = FreePort(); err != nil {
			return nil, errors.Join(fmt.Errorf("starting Prometheus: %w", err), p.removeDir())
		}
		err = p.Start(ctx)
		if err == nil {
			return p, nil
		}
		if attempt == prometheusStartAttempts || !strings.Contains(err.Error(), "address already in use") {
			return nil, errors.Join(err, p.Close())
		}
	}
}

// URL returns the base URL of Prometheus' HTTP API, http://127.0.0.1:<port>.
func (p *Prometheus) URL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
}

// Dir returns the temporary directory holding Prometheus' configuration
// (prometheus.yml), rules (rules/), data (data/) and log (prometheus.log).
func (p *Prometheus) Dir() string {
	return p.dir
}

func (p *Prometheus) logPath() string { return filepath.Join(p.dir, "prometheus.log") }

// WritePrometheusConfig writes dir/prometheus.yml, which scrapes
// cfg.ScrapeTargets and evaluates the rules in dir/rules/*.yaml, and creates
// the rules and data directories: the layout PrometheusArgs runs.
func WritePrometheusConfig(dir string, cfg PrometheusConfig) error {
	if cfg.ScrapeInterval == 0 {
		cfg.ScrapeInterval = time.Second
	}
	if cfg.EvalInterval == 0 {
		cfg.EvalInterval = time.Second
	}
	if cfg.ScrapeInterval < time.Millisecond || cfg.EvalInterval < time.Millisecond {
		return fmt.Errorf("configuring Prometheus: scrape interval %s and evaluation interval %s must be at least 1ms",
			cfg.ScrapeInterval, cfg.EvalInterval)
	}
	for _, d := range []string{filepath.Join(dir, "rules"), filepath.Join(dir, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("configuring Prometheus: creating %s: %w", d, err)
		}
	}
	targets := cfg.ScrapeTargets
	if targets == nil {
		targets = []string{}
	}
	config := map[string]any{
		"global": map[string]any{
			"scrape_interval":     model.Duration(cfg.ScrapeInterval).String(),
			"evaluation_interval": model.Duration(cfg.EvalInterval).String(),
		},
		"rule_files": []string{filepath.Join(dir, "rules", "*.yaml")},
		"scrape_configs": []any{map[string]any{
			"job_name":       "traffic",
			"static_configs": []any{map[string]any{"targets": targets}},
		}},
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return fmt.Errorf("configuring Prometheus: encoding its configuration: %w", err)
	}
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("configuring Prometheus: writing %s: %w", path, err)
	}
	return nil
}

// PrometheusArgs is the command line that runs binary on the layout
// WritePrometheusConfig wrote in dir, listening on 127.0.0.1:port, with the
// lifecycle API (reloads) enabled.
func PrometheusArgs(binary, dir string, port int) []string {
	return []string{binary,
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--web.enable-lifecycle",
	}
}

// PrometheusRulesFile is where, in the layout WritePrometheusConfig wrote in
// dir, the rules loaded through PrometheusFiles go.
func PrometheusRulesFile(dir string) string { return filepath.Join(dir, "rules", "rules.yaml") }

// Start starts a stopped Prometheus again, on the same port and with the
// same data, and waits until it is ready.
func (p *Prometheus) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc != nil {
		return fmt.Errorf("starting Prometheus at %s: already running", p.URL())
	}
	proc, err := StartProcess(ProcessSpec{
		Name: "Prometheus at " + p.URL(), Argv: PrometheusArgs(p.binary, p.dir, p.port),
		Dir: p.dir, Log: p.logPath(), AppendLog: true,
	})
	if err != nil {
		return err
	}
	p.proc = proc
	if err := p.waitReady(ctx, proc); err != nil {
		return errors.Join(err, p.stopLocked())
	}
	return nil
}

// waitReady polls /-/ready until it answers 200, the process exits or the
// wait times out.
func (p *Prometheus) waitReady(ctx context.Context, proc *Process) error {
	ctx, cancel := context.WithTimeout(ctx, prometheusReadyTimeout)
	defer cancel()
	tick := time.NewTicker(prometheusPollInterval)
	defer tick.Stop()
	var last error
	for {
		last = p.ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-proc.Done():
			return fmt.Errorf("starting Prometheus at %s: not ready: %w", p.URL(), proc.Exited())
		case <-ctx.Done():
			return fmt.Errorf("starting Prometheus at %s: not ready: %w (last: %v): %s", p.URL(), context.Cause(ctx), last, p.logTail())
		case <-tick.C:
		}
	}
}

func (p *Prometheus) ready(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/-/ready", nil)
	if err != nil {
		return err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /-/ready: %s", resp.Status)
	}
	return nil
}

// Stop stops Prometheus with SIGTERM (SIGKILL if it has not exited 30s
// later) and waits for it to exit, keeping its port and data for Start. It
// does nothing when Prometheus is stopped.
func (p *Prometheus) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

func (p *Prometheus) stopLocked() error {
	proc := p.proc
	if proc == nil {
		return nil
	}
	p.proc = nil
	return proc.Stop(prometheusStopTimeout)
}

// Close stops Prometheus and removes its temporary directory.
func (p *Prometheus) Close() error {
	return errors.Join(p.Stop(), p.removeDir())
}

func (p *Prometheus) removeDir() error {
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("removing the directory of Prometheus at %s: %w", p.URL(), err)
	}
	return nil
}

// SetRules replaces Prometheus' rules with groups: it writes them to
// rules/rules.yaml, asks Prometheus to reload, and waits until its rules API
// lists exactly those groups' names.
func (p *Prometheus) SetRules(ctx context.Context, groups []monitoringv1.RuleGroup) error {
	files := PrometheusFiles{RulesFile: PrometheusRulesFile(p.dir), URL: p.URL(), HTTP: p.http}
	if err := files.SetRules(ctx, groups); err != nil {
		// The log says which rule failed to load.
		return fmt.Errorf("%w: %s", err, p.logErrors())
	}
	want := make([]string, 0, len(groups))
	for _, g := range groups {
		want = append(want, g.Name)
	}
	slices.Sort(want)

	what := fmt.Sprintf("setting the rules of Prometheus at %s: loading %q", p.URL(), want)
	return Poll(ctx, prometheusPollInterval, prometheusReadyTimeout, what, func(ctx context.Context) error {
		got, err := p.ruleGroupNames(ctx)
		if err == nil && !slices.Equal(got, want) {
			err = fmt.Errorf("rule groups %q, want %q", got, want)
		}
		return err
	})
}

// ruleGroupNames returns the sorted names of the rule groups GET
// /api/v1/rules lists.
func (p *Prometheus) ruleGroupNames(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/api/v1/rules", nil)
	if err != nil {
		return nil, fmt.Errorf("listing rules: %w", err)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing rules: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing rules: GET /api/v1/rules: %s", resp.Status)
	}
	var body struct {
		Data struct {
			Groups []struct {
				Name string `json:"name"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("listing rules: decoding GET /api/v1/rules: %w", err)
	}
	names := make([]string, 0, len(body.Data.Groups))
	for _, g := range body.Data.Groups {
		names = append(names, g.Name)
	}
	slices.Sort(names)
	return names, nil
}

// logTail returns the last lines of Prometheus' log, to explain a failure.
func (p *Prometheus) logTail() string {
	return "log tail:\n" + LogTail(p.logPath(), 40)
}

// logErrors returns the error lines among the last lines of Prometheus' log,
// or the last lines when none is an error.
func (p *Prometheus) logErrors() string {
	tail := p.logTail()
	var errs []string
	for _, line := range strings.Split(tail, "\n") {
		if strings.Contains(line, "level=error") {
			errs = append(errs, line)
		}
	}
	if len(errs) == 0 {
		return tail
	}
	return "log errors:\n" + strings.Join(errs, "\n")
}
