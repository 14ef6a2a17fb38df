// Package fleet runs a local fleet of Kubernetes clusters for the demo and
// the end-to-end tests: a delivery cluster and target clusters started by
// kwokctl's binary runtime from the binaries built under ./bin, each with
// fake nodes on which the real kube-controller-manager and kube-scheduler
// run pods; Picchu's CRDs on the delivery cluster, the real CRDs of Istio,
// prometheus-operator, KEDA and Sloth on the targets, and the targets
// registered as a user registers them (a Cluster and its Secret). Beside
// the clusters run a real Prometheus and the mesh (test/e2e/mesh), which plays
// users and Istio and loads the rules Picchu writes into Prometheus.
//
// Everything lives in one directory (by default .fleet at the root of the
// repository): kwokctl's work directory, kubeconfigs, Prometheus' data, the
// logs and pid files of the processes. Up is safe to run again: it reuses
// what runs. Down stops every process and removes the directory.
package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/kit"
)

const (
	// Delivery is the name of the delivery cluster.
	Delivery = "delivery"
	// DefaultFleet is the fleet the targets are registered in.
	DefaultFleet = "production"
	// DefaultNamespace holds the Revisions, Clusters and Secrets on the
	// delivery cluster.
	DefaultNamespace = "picchu"
	// NodeCount is the number of fake nodes of every cluster unless
	// Options.Nodes says otherwise.
	NodeCount = 3

	// readyTimeout bounds the wait for a cluster, Prometheus or the mesh to
	// become ready.
	readyTimeout = 2 * time.Minute
	// pollInterval is how often readiness is polled.
	pollInterval = 100 * time.Millisecond
)

// DefaultTargets are the target clusters of the local fleet.
var DefaultTargets = []string{"east", "west"}

// DefaultDir is the fleet's directory when Options.Dir is empty: .fleet at
// the root of the repository.
func DefaultDir() string { return filepath.Join(kit.RepoRoot(), ".fleet") }

// Options says what fleet to run.
type Options struct {
	// Dir holds all of the fleet's state (DefaultDir when empty).
	Dir string
	// Targets are the names of the target clusters (DefaultTargets when empty).
	Targets []string
	// Fleet is the fleet the targets are registered in (DefaultFleet when empty).
	Fleet string
	// Namespace of the Clusters and Secrets (DefaultNamespace when empty).
	Namespace string
	// Log receives a line per step (nothing when nil).
	Log io.Writer
	// ClustersOnly starts the clusters and registers the targets, without
	// Prometheus and the mesh (a benchmark's fleet: the mesh's reads would
	// load the API servers it measures).
	ClustersOnly bool
	// ControllerManagerArgs and APIServerArgs are more flags
	// ("name=value") of every cluster's kube-controller-manager and
	// kube-apiserver, when the cluster is created.
	ControllerManagerArgs, APIServerArgs []string
	// Nodes is the number of fake nodes of every cluster (NodeCount when
	// 0), each with room for 110 pods and 32 CPUs of requests.
	Nodes int
}

func (o *Options) defaults() {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if len(o.Targets) == 0 {
		o.Targets = DefaultTargets
	}
	if o.Fleet == "" {
		o.Fleet = DefaultFleet
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Nodes <= 0 {
		o.Nodes = NodeCount
	}
}

// Cluster is one running cluster of the fleet.
type Cluster struct {
	// Name is kwokctl's name of the cluster, and the name of its Cluster
	// object on the delivery cluster for a target.
	Name string
	// Kubeconfig is the path of an administrator's kubeconfig.
	Kubeconfig string
	Config     *rest.Config
	Client     client.Client
}

// Fleet is a running local fleet.
type Fleet struct {
	Dir       string
	Fleet     string
	Namespace string
	Delivery  *Cluster
	Targets   []*Cluster
	// PrometheusURL is the base URL of the fleet's Prometheus.
	PrometheusURL string
	// MeshURL is the base URL of the mesh (see test/e2e/mesh).
	MeshURL string

	state  state
	tools  tools
	logOut io.Writer
	// controllerManagerArgs, apiServerArgs and nodes are Options'.
	controllerManagerArgs, apiServerArgs []string
	nodes                                int
	// extra are the targets AddTarget started, by name.
	extra map[string]*Cluster
}

// Target returns the target cluster named name, AddTarget's included, or nil.
func (f *Fleet) Target(name string) *Cluster {
	for _, c := range f.Targets {
		if c.Name == name {
			return c
		}
	}
	return f.extra[name]
}

// state is what must stay the same from one Up to the next: the ports of
// the processes beside the clusters. It is kept in <Dir>/fleet.json.
type state struct {
	PrometheusPort int `json:"prometheusPort"`
	MeshPort       int `json:"meshPort"`
	OperatorPort   int `json:"operatorMetricsPort"`
	ProbePort      int `json:"operatorProbePort"`
}

func (f *Fleet) logf(format string, args ...any) {
	fmt.Fprintf(f.logOut, "fleet: "+format+"\n", args...)
}

// Up starts the fleet, or the parts of it that do not run, and returns it
// once every cluster, Prometheus and the mesh are ready. What the Kubernetes
// libraries of this process log goes to <Dir>/logs/fleet.log.
func Up(ctx context.Context, opts Options) (*Fleet, error) {
	opts.defaults()
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("fleet directory %s: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the fleet directory: %w", err)
	}
	if err := logToFile(dir); err != nil {
		return nil, err
	}
	f := &Fleet{Dir: dir, Fleet: opts.Fleet, Namespace: opts.Namespace, logOut: opts.Log,
		controllerManagerArgs: opts.ControllerManagerArgs, apiServerArgs: opts.APIServerArgs, nodes: opts.Nodes}
	if f.tools, err = findTools(ctx); err != nil {
		return nil, err
	}
	if err := f.loadState(); err != nil {
		return nil, err
	}
	for _, name := range append([]string{Delivery}, opts.Targets...) {
		c, err := f.ensureCluster(ctx, name)
		if err != nil {
			return nil, err
		}
		if name == Delivery {
			f.Delivery = c
		} else {
			f.Targets = append(f.Targets, c)
		}
	}
	if err := f.installCRDs(ctx); err != nil {
		return nil, err
	}
	for _, t := range f.Targets {
		if err := f.Register(ctx, t, t.Name, f.Fleet); err != nil {
			return nil, err
		}
	}
	if opts.ClustersOnly {
		return f, nil
	}
	if err := f.ensurePrometheus(ctx); err != nil {
		return nil, err
	}
	if err := f.ensureMesh(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// Down stops every process of the fleet in dir (DefaultDir when empty),
// deletes its clusters and removes the directory. A fleet that does not
// exist is not an error.
func Down(ctx context.Context, dir string) error {
	if dir == "" {
		dir = DefaultDir()
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("fleet directory %s: %w", dir, err)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, name := range daemonNames {
		if err := (daemon{dir, name}).stop(); err != nil {
			errs = append(errs, err)
		}
	}
	clusters, err := os.ReadDir(filepath.Join(dir, "kwok", "clusters"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("listing the fleet's clusters: %w", err))
	}
	if len(clusters) > 0 {
		t, err := findTools(ctx)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, c := range clusters {
			if _, err := t.kwokctl(ctx, dir, "delete", "cluster", "--name", c.Name(), "--kubeconfig", kubeconfigPath(dir)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Whatever kwokctl or a crashed run left behind.
	if err := killAll(dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// Processes returns the pids of the processes whose command line mentions
// the fleet directory dir, this process and its ancestors (say, the "go
// run" that started it) left out: what Down leaves must be none.
func Processes(dir string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	self := ancestors()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || self[pid] {
			continue
		}
		if alive(pid, dir) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// ancestors returns this process and its ancestors.
func ancestors() map[int]bool {
	out := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !out[pid]; {
		out[pid] = true
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			break
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(fields) < 2 {
			break
		}
		if pid, err = strconv.Atoi(fields[1]); err != nil {
			break
		}
	}
	return out
}

func killAll(dir string) error {
	pids, err := Processes(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		errs = append(errs, killPid(pid))
	}
	// SIGKILL is delivered when the process is next scheduled: on a busy
	// machine it still runs when kill returns. Down promises nothing of the
	// fleet's runs when it returns, so wait for each to end.
	for _, pid := range pids {
		errs = append(errs, awaitExit(pid, dir))
	}
	return errors.Join(errs...)
}

func kubeconfigPath(dir string) string { return filepath.Join(dir, "kubeconfig.yaml") }

func (f *Fleet) statePath() string { return filepath.Join(f.Dir, "fleet.json") }

// loadState reads the fleet's ports, choosing free ones the first time.
func (f *Fleet) loadState() error {
	data, err := os.ReadFile(f.statePath())
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &f.state); err != nil {
			return fmt.Errorf("reading %s: %w", f.statePath(), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading the fleet's state: %w", err)
	}
	for _, p := range []*int{&f.state.PrometheusPort, &f.state.MeshPort, &f.state.OperatorPort, &f.state.ProbePort} {
		if *p != 0 {
			continue
		}
		if *p, err = kit.FreePort(); err != nil {
			return err
		}
	}
	data, err = json.MarshalIndent(f.state, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the fleet's state: %w", err)
	}
	if err := os.WriteFile(f.statePath(), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the fleet's state: %w", err)
	}
	f.PrometheusURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(f.state.PrometheusPort))
	f.MeshURL = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(f.state.MeshPort))
	return nil
}

// newCluster builds clients from a kubeconfig.
func newCluster(name, kubeconfig string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: loading %s: %w", name, kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: building a client: %w", name, err)
	}
	return &Cluster{Name: name, Kubeconfig: kubeconfig, Config: cfg, Client: c}, nil
}

// Kubectl is the kubectl that hack/install-k8s-binaries.sh builds beside the
// Kubernetes binaries: bin/kubectl, so that the commands the fleet prints
// work on a machine that has only Go.
func Kubectl() string { return filepath.Join(kit.RepoRoot(), "bin", "kubectl") }

// KubectlCommand is the command line that runs kubectl with args against
// cluster c, as printed for a person: it runs as printed from the current
// directory.
func (f *Fleet) KubectlCommand(c *Cluster, args string) string {
	return fmt.Sprintf("%s --kubeconfig %s %s", shown(Kubectl()), shown(c.Kubeconfig), args)
}

// Commands are the kubectl commands Describe prints, for a person to
// explore the fleet with, one per cluster, delivery first.
func (f *Fleet) Commands() []string {
	cmds := []string{f.KubectlCommand(f.Delivery, "get revisions,releasemanagers,clusters -n "+f.Namespace)}
	for _, t := range f.Targets {
		cmds = append(cmds, f.KubectlCommand(t, "get virtualservices,httproutes,replicasets,pods -A"))
	}
	return cmds
}

// shown is path relative to the current directory when it lies inside it,
// and absolute otherwise.
func shown(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// Describe says, for a person, what runs and how to reach it.
func (f *Fleet) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The local fleet runs (state in %s):\n", shown(f.Dir))
	names := append([]string{f.Delivery.Name}, make([]string, len(f.Targets))...)
	for i, t := range f.Targets {
		names[i+1] = t.Name
	}
	for i, cmd := range f.Commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", names[i], cmd)
	}
	fmt.Fprintf(&b, "  Prometheus %s (alerts: %s/alerts)\n", f.PrometheusURL, f.PrometheusURL)
	fmt.Fprintf(&b, "  mesh       %s/weights, %s/metrics\n", f.MeshURL, f.MeshURL)
	if _, ok := (daemon{f.Dir, operatorDaemon}).running(); ok {
		fmt.Fprintf(&b, "  operator   log %s, metrics %s\n", shown(f.OperatorLog()), f.OperatorMetricsURL())
	}
	fmt.Fprintf(&b, "Stop it all with: make fleet-down\n")
	return b.String()
}
