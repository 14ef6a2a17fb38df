// Command mesh plays the users and the Istio mesh of the local demo fleet:
// it reads the VirtualServices Picchu writes on the target clusters and
// serves, on /metrics, the Istio request counters of the traffic their
// weights send to each build, failing the ratio of requests set with
// --error-ratio or PUT /error-ratio. A route change takes effect --lag after
// the mesh reads it (1 s, as proxies apply routes some time after they are
// written), and the requests it sends to a build with no ready pod are
// counted (mesh_requests_to_unready_total). With --prometheus-url and --rules-file
// it also loads the clusters' PrometheusRules into that Prometheus, as
// prometheus-operator would. See package test/e2e/mesh for the HTTP API.
//
// Usage:
//
//	go run ./hack/mesh --kubeconfig target-0=/path/to/kubeconfig-0 \
//	    --kubeconfig target-1=/path/to/kubeconfig-1 [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/e2e/mesh"
	"github.com/medium/picchu/test/kit"
)

// shutdownTimeout bounds the wait for HTTP requests in flight at exit.
const shutdownTimeout = 5 * time.Second

func main() {
	os.Exit(mainCode())
}

// mainCode runs the program and returns its exit code: 2 for bad flags, 1
// for a failure.
func mainCode() int {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "mesh: %v\nRun mesh -h for the flags.\n", err)
		return 2
	}
	logger := log.New(os.Stderr, "mesh: ", log.LstdFlags|log.Lmicroseconds)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger, nil); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// config is what the flags say.
type config struct {
	kubeconfigs   map[string]string // kubeconfig paths by cluster name
	listen        string
	rps           float64
	interval      time.Duration
	lag           time.Duration
	prometheusURL string
	rulesFile     string
	errorRatios   []errorRatio
}

// errorRatio is an --error-ratio flag.
type errorRatio struct {
	app, tag string
	ratio    float64
}

// parseFlags parses the command line, writing usage and flag errors to out.
func parseFlags(args []string, out io.Writer) (config, error) {
	cfg := config{kubeconfigs: map[string]string{}}
	fs := flag.NewFlagSet("mesh", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(out, "Usage: mesh --kubeconfig name=path [--kubeconfig name=path ...] [flags]\n\n"+
			"Plays users and the Istio mesh of the clusters' VirtualServices, serving Istio request counters on /metrics.\n\n")
		fs.PrintDefaults()
	}
	fs.Var(kubeconfigFlag(cfg.kubeconfigs), "kubeconfig",
		"`name=path` of a target cluster's kubeconfig (repeatable, at least one)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:9901", "`address` to serve the HTTP API and /metrics on")
	fs.Float64Var(&cfg.rps, "rps", mesh.DefaultRequestsPerSecond, "requests each cluster receives per app per second")
	fs.DurationVar(&cfg.interval, "interval", mesh.DefaultInterval, "how often weights are read, counters advanced and rules synced")
	fs.DurationVar(&cfg.lag, "lag", mesh.DefaultLag,
		"how long after it is read a route change takes effect in the traffic, as proxies apply routes (0: at once)")
	fs.StringVar(&cfg.prometheusURL, "prometheus-url", "",
		"base `URL` of a Prometheus run with --web.enable-lifecycle to load the clusters' PrometheusRules into (with --rules-file)")
	fs.StringVar(&cfg.rulesFile, "rules-file", "",
		"`path` of the rule file, among that Prometheus' rule_files, to write the rules to (with --prometheus-url)")
	fs.Func("error-ratio", "`app/tag=ratio`: ratio (0 to 1) of the requests to app's tag that fail with 500 (repeatable)",
		func(s string) error {
			r, err := parseErrorRatio(s)
			if err == nil {
				cfg.errorRatios = append(cfg.errorRatios, r)
			}
			return err
		})
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected argument %q: every setting is a flag", fs.Arg(0))
	case len(cfg.kubeconfigs) == 0:
		return config{}, errors.New("no --kubeconfig name=path given: the mesh needs at least one cluster")
	case math.IsNaN(cfg.rps) || math.IsInf(cfg.rps, 0) || cfg.rps <= 0:
		return config{}, fmt.Errorf("--rps %v is not a positive number", cfg.rps)
	case cfg.interval <= 0:
		return config{}, fmt.Errorf("--interval %s is not positive", cfg.interval)
	case cfg.lag < 0:
		return config{}, fmt.Errorf("--lag %s is negative", cfg.lag)
	case (cfg.prometheusURL == "") != (cfg.rulesFile == ""):
		return config{}, errors.New("--prometheus-url and --rules-file go together: give both or neither")
	}
	return cfg, nil
}

// kubeconfigFlag collects --kubeconfig name=path flags.
type kubeconfigFlag map[string]string

func (f kubeconfigFlag) String() string {
	names := make([]string, 0, len(f))
	for name := range f {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, name+"="+f[name])
	}
	return strings.Join(parts, ",")
}

func (f kubeconfigFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("%q is not name=path", s)
	}
	if prev, dup := f[name]; dup {
		return fmt.Errorf("cluster %s given twice (%s and %s)", name, prev, path)
	}
	f[name] = path
	return nil
}

// parseErrorRatio parses app/tag=ratio.
func parseErrorRatio(s string) (errorRatio, error) {
	eq := strings.LastIndex(s, "=")
	if eq < 0 {
		return errorRatio{}, fmt.Errorf("%q is not app/tag=ratio", s)
	}
	app, tag, ok := strings.Cut(s[:eq], "/")
	if !ok || app == "" || tag == "" {
		return errorRatio{}, fmt.Errorf("%q is not app/tag=ratio", s)
	}
	ratio, err := strconv.ParseFloat(s[eq+1:], 64)
	if err != nil || math.IsNaN(ratio) || ratio < 0 || ratio > 1 {
		return errorRatio{}, fmt.Errorf("ratio %q of %s/%s is not a number between 0 and 1", s[eq+1:], app, tag)
	}
	return errorRatio{app: app, tag: tag, ratio: ratio}, nil
}

// run serves the mesh until ctx is done or serving fails. onListen, when
// set, learns the address listened on.
func run(ctx context.Context, cfg config, logger *log.Logger, onListen func(net.Addr)) error {
	clusters, err := clients(cfg.kubeconfigs)
	if err != nil {
		return err
	}
	opts := mesh.Options{
		Clusters: clusters, RequestsPerSecond: cfg.rps, Interval: cfg.interval, Lag: &cfg.lag, Log: logger.Printf,
	}
	if cfg.prometheusURL != "" {
		opts.Rules = kit.PrometheusFiles{RulesFile: cfg.rulesFile, URL: cfg.prometheusURL}
	}
	m, err := mesh.New(opts)
	if err != nil {
		return err
	}
	for _, r := range cfg.errorRatios {
		if err := m.SetErrorRatio(r.app, r.tag, r.ratio); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.listen, err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second}
	logger.Printf("serving http://%s/metrics for %d clusters, %v requests per second per app, every %s, route changes %s after they are read",
		ln.Addr(), len(clusters), cfg.rps, cfg.interval, cfg.lag)
	if onListen != nil {
		onListen(ln.Addr())
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(ctx) })
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving on %s: %w", ln.Addr(), err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := srv.Shutdown(shutdownCtx); err != nil {
			return fmt.Errorf("stopping the server on %s: %w", ln.Addr(), err)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Print("stopped")
	return nil
}

// clients builds a client of each cluster from its kubeconfig.
func clients(kubeconfigs map[string]string) (map[string]client.Client, error) {
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	clusters := make(map[string]client.Client, len(kubeconfigs))
	for name, path := range kubeconfigs {
		restConfig, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: loading kubeconfig %s: %w", name, path, err)
		}
		if clusters[name], err = client.New(restConfig, client.Options{Scheme: scheme}); err != nil {
			return nil, fmt.Errorf("cluster %s: creating a client from kubeconfig %s: %w", name, path, err)
		}
	}
	return clusters, nil
}
