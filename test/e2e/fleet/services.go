package fleet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/medium/picchu/test/kit"
)

const (
	// probeTimeout bounds one readiness probe.
	probeTimeout = 2 * time.Second
	// ScrapeInterval is how often the fleet's Prometheus scrapes the mesh
	// and evaluates rules.
	ScrapeInterval = time.Second
)

// The fleet's daemons, in the order Down stops them.
const (
	operatorDaemon   = "operator"
	meshDaemon       = "mesh"
	prometheusDaemon = "prometheus"
)

var daemonNames = []string{operatorDaemon, meshDaemon, prometheusDaemon}

// httpOK GETs url and fails unless it answers 200.
func httpOK(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return nil
}

// waitHTTP waits until url answers 200, or the daemon exits.
func (f *Fleet) waitHTTP(ctx context.Context, d daemon, url string) error {
	hc := &http.Client{Timeout: probeTimeout}
	return kit.Poll(ctx, pollInterval, readyTimeout, d.name+" ready", func(ctx context.Context) error {
		if _, ok := d.running(); !ok {
			return fmt.Errorf("%s is not running; its log %s ends with:\n%s", d.name, d.LogFile(), kit.LogTail(d.LogFile(), 20))
		}
		return httpOK(ctx, hc, url)
	})
}

func (f *Fleet) prometheusDir() string { return filepath.Join(f.Dir, "prometheus") }

// RulesFile is where the mesh writes the rules Picchu wrote on the targets,
// for Prometheus to evaluate.
func (f *Fleet) RulesFile() string { return kit.PrometheusRulesFile(f.prometheusDir()) }

// ensurePrometheus starts the fleet's Prometheus unless it runs: it
// scrapes the mesh and the operator every ScrapeInterval and evaluates the rules in
// RulesFile's directory, reloaded by the mesh through the lifecycle API.
func (f *Fleet) ensurePrometheus(ctx context.Context) error {
	d := daemon{f.Dir, prometheusDaemon}
	if _, ok := d.running(); !ok {
		dir := f.prometheusDir()
		if err := kit.WritePrometheusConfig(dir, kit.PrometheusConfig{
			// The mesh's requests, and the operator's own metrics (what
			// config/grafana's dashboard shows).
			ScrapeTargets:  []string{"127.0.0.1:" + strconv.Itoa(f.state.MeshPort), "127.0.0.1:" + strconv.Itoa(f.state.OperatorPort)},
			ScrapeInterval: ScrapeInterval, EvalInterval: ScrapeInterval,
		}); err != nil {
			return err
		}
		f.logf("starting Prometheus at %s", f.PrometheusURL)
		if err := d.start(kit.PrometheusArgs(f.tools.prometheus, dir, f.state.PrometheusPort)); err != nil {
			return err
		}
	}
	return f.waitHTTP(ctx, d, f.PrometheusURL+"/-/ready")
}

// ensureMesh builds the mesh (hack/mesh) into bin/ and starts it unless it
// runs: it reads the VirtualServices and HTTPRoutes of every target,
// counts requests per tag at their weights for Prometheus (a change taking
// effect mesh.DefaultLag after it is read, its default), counts those sent
// to builds with no ready pod (mesh.UnreadyRequests), and loads the
// targets' PrometheusRules into Prometheus.
func (f *Fleet) ensureMesh(ctx context.Context) error {
	d := daemon{f.Dir, meshDaemon}
	if _, ok := d.running(); !ok {
		binary, err := build(ctx, "./hack/mesh", "picchu-mesh")
		if err != nil {
			return err
		}
		args := []string{binary,
			"--listen=127.0.0.1:" + strconv.Itoa(f.state.MeshPort),
			"--prometheus-url=" + f.PrometheusURL,
			"--rules-file=" + f.RulesFile(),
		}
		for _, t := range f.Targets {
			args = append(args, "--kubeconfig="+t.Name+"="+t.Kubeconfig)
		}
		f.logf("starting the mesh at %s", f.MeshURL)
		if err := d.start(args); err != nil {
			return err
		}
	}
	return f.waitHTTP(ctx, d, f.MeshURL+"/healthz")
}

// build builds the main package pkg of this repository into bin/name and
// returns the binary's path.
func build(ctx context.Context, pkg, name string) (string, error) {
	binary := filepath.Join(kit.RepoRoot(), "bin", name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, pkg)
	cmd.Dir = kit.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %w: %s", pkg, err, out)
	}
	return binary, nil
}
