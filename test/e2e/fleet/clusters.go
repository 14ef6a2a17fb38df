package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/medium/picchu/test/kit"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// tools are the binaries the fleet runs, built or installed under ./bin by
// the repository's scripts when missing.
type tools struct {
	k8s        string // directory of etcd, kube-apiserver, kube-controller-manager, kube-scheduler
	kwok       string // directory of kwok and kwokctl
	prometheus string // the Prometheus server
}

func findTools(ctx context.Context) (tools, error) {
	var t tools
	var err error
	if t.k8s, err = kit.Assets(ctx); err != nil {
		return t, err
	}
	kwok, err := kit.KwokBinary(ctx)
	if err != nil {
		return t, err
	}
	t.kwok = filepath.Dir(kwok)
	if t.prometheus, err = kit.PrometheusBinary(ctx); err != nil {
		return t, err
	}
	return t, nil
}

// kwokctl runs kwokctl with the fleet's work directory and returns its output.
func (t tools) kwokctl(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(t.kwok, "kwokctl"), args...)
	cmd.Env = append(os.Environ(), "KWOK_WORKDIR="+filepath.Join(dir, "kwok"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kwokctl %s: %w: %s", strings.Join(args, " "), err, kit.LastLines(out.String(), 10))
	}
	return out.String(), nil
}

func (f *Fleet) clusterDir(name string) string {
	return filepath.Join(f.Dir, "kwok", "clusters", name)
}

// ensureCluster creates the cluster, or starts it when it is stopped, and
// waits until its API server is ready and its fake nodes are Ready.
func (f *Fleet) ensureCluster(ctx context.Context, name string) (*Cluster, error) {
	kubeconfig := filepath.Join(f.clusterDir(name), "kubeconfig.yaml")
	_, err := os.Stat(kubeconfig)
	created := errors.Is(err, os.ErrNotExist)
	if created {
		f.logf("creating cluster %s", name)
		args := []string{"create", "cluster", "--name", name, "--runtime", "binary",
			"--kubeconfig", kubeconfigPath(f.Dir),
			"--etcd-binary", filepath.Join(f.tools.k8s, "etcd"),
			"--kube-apiserver-binary", filepath.Join(f.tools.k8s, "kube-apiserver"),
			"--kube-controller-manager-binary", filepath.Join(f.tools.k8s, "kube-controller-manager"),
			"--kube-scheduler-binary", filepath.Join(f.tools.k8s, "kube-scheduler"),
			"--kwok-controller-binary", filepath.Join(f.tools.kwok, "kwok"),
			// HPAs act within a second, as in the tests.
			"--extra-args", "kube-controller-manager=horizontal-pod-autoscaler-sync-period=1s",
			// Nodes report their heartbeat in their status instead of in
			// leases: kwok v0.7's lease controller, restarted with its
			// cluster, fails to take over the leases it created and stops
			// running pods on its nodes.
			"--node-lease-duration-seconds", "0",
		}
		for _, a := range f.controllerManagerArgs {
			args = append(args, "--extra-args", "kube-controller-manager="+a)
		}
		for _, a := range f.apiServerArgs {
			args = append(args, "--extra-args", "kube-apiserver="+a)
		}
		if _, err := f.tools.kwokctl(ctx, f.Dir, args...); err != nil {
			return nil, fmt.Errorf("creating cluster %s: %w", name, err)
		}
	}
	c, err := newCluster(name, kubeconfig)
	if err != nil {
		return nil, err
	}
	if !created && !c.ready(ctx) {
		f.logf("starting cluster %s", name)
		if _, err := f.tools.kwokctl(ctx, f.Dir, "start", "cluster", "--name", name); err != nil {
			return nil, fmt.Errorf("starting cluster %s: %w", name, err)
		}
	}
	if err := kit.Poll(ctx, pollInterval, readyTimeout, "cluster "+name+" ready", func(ctx context.Context) error {
		if !c.ready(ctx) {
			return errors.New("API server not ready")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := f.tools.kwokctl(ctx, f.Dir, "scale", "node", "--name", name, "--replicas", fmt.Sprint(f.nodeCount())); err != nil {
		return nil, fmt.Errorf("cluster %s: creating nodes: %w", name, err)
	}
	if err := kit.Poll(ctx, pollInterval, readyTimeout, fmt.Sprintf("%d Ready nodes on %s", f.nodeCount(), name), func(ctx context.Context) error {
		return c.nodesReady(ctx, f.nodeCount())
	}); err != nil {
		return nil, err
	}
	f.logf("cluster %s ready (kubeconfig %s)", name, kubeconfig)
	return c, nil
}

// ready says whether the cluster's API server answers /readyz.
func (c *Cluster) ready(ctx context.Context) bool {
	hc, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return httpOK(ctx, hc, c.Config.Host+"/readyz") == nil
}

func (c *Cluster) nodesReady(ctx context.Context, want int) error {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue && !n.Spec.Unschedulable {
				ready++
			}
		}
	}
	if ready < want {
		return fmt.Errorf("%d of %d nodes Ready", ready, want)
	}
	return nil
}

// StopCluster stops every process of a cluster, its API server included:
// to the operator, the cluster is down. Its data stays for StartCluster.
func (f *Fleet) StopCluster(ctx context.Context, name string) error {
	if _, err := f.tools.kwokctl(ctx, f.Dir, "stop", "cluster", "--name", name); err != nil {
		return fmt.Errorf("stopping cluster %s: %w", name, err)
	}
	return nil
}

// StartCluster starts a stopped cluster again and waits until it is ready.
func (f *Fleet) StartCluster(ctx context.Context, name string) error {
	c := f.Target(name)
	if name == Delivery {
		c = f.Delivery
	}
	if c == nil {
		return fmt.Errorf("starting cluster %s: no such cluster in the fleet", name)
	}
	if _, err := f.tools.kwokctl(ctx, f.Dir, "start", "cluster", "--name", name); err != nil {
		return fmt.Errorf("starting cluster %s: %w", name, err)
	}
	return kit.Poll(ctx, pollInterval, readyTimeout, "cluster "+name+" ready", func(ctx context.Context) error {
		if !c.ready(ctx) {
			return errors.New("API server not ready")
		}
		return c.nodesReady(ctx, f.nodeCount())
	})
}

// installCRDs installs (or updates) Picchu's CRDs on the delivery cluster
// and the third-party CRDs on the targets, and waits until they serve.
func (f *Fleet) installCRDs(ctx context.Context) error {
	delivery := []string{filepath.Join(kit.RepoRoot(), "config", "crd", "bases")}
	// envtest waits 10 s by default for CRDs to serve, which a busy 2-core
	// machine can exceed; readyTimeout, as for the clusters.
	if _, err := envtest.InstallCRDs(f.Delivery.Config, envtest.CRDInstallOptions{
		Paths: delivery, ErrorIfPathMissing: true, MaxTime: readyTimeout,
	}); err != nil {
		return fmt.Errorf("installing Picchu's CRDs on %s: %w", Delivery, err)
	}
	for _, t := range f.Targets {
		if err := installThirdPartyCRDs(ctx, t); err != nil {
			return err
		}
	}
	f.logf("CRDs installed: Picchu's on %s, Istio's, prometheus-operator's, KEDA's and Sloth's on the targets", Delivery)
	return nil
}

// installThirdPartyCRDs installs the CRDs a target serves (Istio's,
// prometheus-operator's, KEDA's and Sloth's) on t.
func installThirdPartyCRDs(ctx context.Context, t *Cluster) error {
	thirdParty, err := kit.ThirdPartyCRDPaths(ctx)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(t.Config, envtest.CRDInstallOptions{
		Paths: thirdParty, ErrorIfPathMissing: true, MaxTime: readyTimeout,
	}); err != nil {
		return fmt.Errorf("installing Istio's, prometheus-operator's, KEDA's and Sloth's CRDs on %s: %w", t.Name, err)
	}
	return nil
}

// AddTarget starts one more target cluster, name, serving the third-party
// CRDs, for a test that needs more clusters than the fleet has. It is not
// among Targets, which every test observes; Target finds it, StopCluster
// and StartCluster act on it, RemoveTarget deletes it, and Down too.
func (f *Fleet) AddTarget(ctx context.Context, name string) (*Cluster, error) {
	c, err := f.ensureCluster(ctx, name)
	if err != nil {
		return nil, err
	}
	if err := installThirdPartyCRDs(ctx, c); err != nil {
		return nil, err
	}
	if f.extra == nil {
		f.extra = map[string]*Cluster{}
	}
	f.extra[name] = c
	return c, nil
}

// RemoveTarget deletes a cluster AddTarget started, with its processes and data.
func (f *Fleet) RemoveTarget(ctx context.Context, name string) error {
	if f.extra[name] == nil {
		return fmt.Errorf("removing cluster %s: AddTarget did not start it", name)
	}
	if _, err := f.tools.kwokctl(ctx, f.Dir, "delete", "cluster", "--name", name, "--kubeconfig", kubeconfigPath(f.Dir)); err != nil {
		return fmt.Errorf("removing cluster %s: %w", name, err)
	}
	delete(f.extra, name)
	return nil
}

// Register registers the target cluster t on the delivery cluster as a user
// does: a Secret holding its administrator's credentials (key auth-info, a
// kubeconfig user as JSON) and a Cluster named as, labelled with the fleet,
// pointing at its API server with its CA. Registering again updates both.
func (f *Fleet) Register(ctx context.Context, t *Cluster, as, fleetName string) error {
	return f.RegisterVia(ctx, t, as, fleetName, t.Config.Host)
}

// RegisterVia registers t as Register does, reached at server (a Proxy's
// URL, say) rather than at its own address.
func (f *Fleet) RegisterVia(ctx context.Context, t *Cluster, as, fleetName, server string) error {
	dir := f.clusterDir(t.Name)
	read := func(file string) ([]byte, error) {
		data, err := os.ReadFile(filepath.Join(dir, "pki", file))
		if err != nil {
			return nil, fmt.Errorf("registering cluster %s: %w", t.Name, err)
		}
		return data, nil
	}
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read("admin.crt")
	if err != nil {
		return err
	}
	key, err := read("admin.key")
	if err != nil {
		return err
	}
	if _, err := kit.RegisterTarget(ctx, f.Delivery.Client, kit.Registration{
		Namespace: f.Namespace, Name: as, Fleet: fleetName, Server: server, CAData: ca,
		User: &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key},
	}); err != nil {
		return fmt.Errorf("registering cluster %s as %s: %w", t.Name, as, err)
	}
	f.logf("cluster %s registered as Cluster %s/%s of fleet %s", t.Name, f.Namespace, as, fleetName)
	return nil
}

// nodeCount is the number of fake nodes of each cluster.
func (f *Fleet) nodeCount() int {
	if f.nodes > 0 {
		return f.nodes
	}
	return NodeCount
}
