package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	toolscache "k8s.io/client-go/tools/cache"
	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// raceBuild says the test binary is built with the race detector
// (race_test.go).
var raceBuild bool

// sigtermDeadline is how long after SIGTERM the operator must have exited,
// whatever its API servers do (DESIGN.md).
const sigtermDeadline = 15 * time.Second

// stopCPU is the processor time the operator may use from the moment its
// API server stops until it has exited: an idle operator and its stop use
// a small part of it, a loop without backoff all of it within 2 s.
const stopCPU = 2 * time.Second

// operatorBuild is the operator binary the process tests run, built once
// by operatorBinary and removed by TestMain.
var operatorBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// operatorBinary builds the operator as `make build` does (with the race
// detector when the test has it, so the build reuses the packages compiled
// for the test) and returns its path.
func operatorBinary(t *testing.T) string {
	t.Helper()
	b := &operatorBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "picchu-operator-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "picchu")
		args := []string{"build", "-o", b.path}
		if raceBuild {
			args = append(args, "-race")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
		cmd.Dir = kit.RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// removeOperatorBuild removes what operatorBinary built.
func removeOperatorBuild() error {
	if operatorBuild.dir == "" {
		return nil
	}
	if err := os.RemoveAll(operatorBuild.dir); err != nil {
		return fmt.Errorf("removing the operator's build: %w", err)
	}
	return nil
}

// operatorProcess is the operator binary running as a child of the test.
type operatorProcess struct {
	*kit.Process
	out                    *lockedBuffer
	probeAddr, metricsAddr string
}

// startOperatorProcess runs the operator binary against env's delivery
// cluster as user, with args after the kubeconfig and the addresses, and
// kills it (after SIGTERM) if it still runs when the test ends.
func startOperatorProcess(t *testing.T, env *harness.Env, user envtest.User, args ...string) *operatorProcess {
	t.Helper()
	binary := operatorBinary(t)
	added, err := env.Delivery.Env.AddUser(user, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := added.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kubeconfigFile := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfigFile, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	o := &operatorProcess{out: &lockedBuffer{}, probeAddr: freePort(t), metricsAddr: freePort(t)}
	argv := append([]string{binary,
		"--kubeconfig", kubeconfigFile,
		"--namespaces", env.Namespace,
		"--metrics-addr", o.metricsAddr,
		"--health-probe-bind-address", o.probeAddr,
		// Timings of the stop, in a failure's log.
		"--zap-time-encoding", "rfc3339nano",
	}, args...)
	spec := kit.ProcessSpec{Name: "picchu", Argv: argv, Log: filepath.Join(dir, "picchu.log"), Tee: o.out}
	if raceBuild {
		// The race detector's wait of a second at exit is not the operator's.
		spec.Env = []string{"GORACE=atexit_sleep_ms=0"}
	}
	o.Process, err = kit.StartProcess(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if o.Exited() == nil {
			_ = o.Stop(time.Second)
		}
		if t.Failed() {
			t.Logf("the operator's output ends with:\n%s", kit.LastLines(o.out.since(0), 60))
		}
	})
	return o
}

// waitReady waits until the operator's readiness probe answers 200.
func (o *operatorProcess) waitReady(t *testing.T) {
	t.Helper()
	kit.Eventually(t, 60*time.Second, "the operator is ready", func() error {
		if err := o.Exited(); err != nil {
			t.Fatal(err) // it will not get better
		}
		code, body, err := get("http://" + o.probeAddr + "/readyz")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("readyz: %d %s", code, body)
		}
		return nil
	})
}

// waitLogged waits until the operator's output after mark holds what at
// least n times.
func (o *operatorProcess) waitLogged(t *testing.T, mark int, what string, n int, timeout time.Duration) {
	t.Helper()
	kit.Eventually(t, timeout, fmt.Sprintf("the operator logs %q %d times", what, n), func() error {
		if err := o.Exited(); err != nil {
			t.Fatal(err) // it will not get better
		}
		if got := strings.Count(o.out.since(mark), what); got < n {
			return fmt.Errorf("%d times so far", got)
		}
		return nil
	})
}

// waitRequestFailed waits until the operator's metrics count a request to
// server that got no answer (client-go's code "<error>": the connection
// was refused or dropped).
func (o *operatorProcess) waitRequestFailed(t *testing.T, server string, timeout time.Duration) {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	series := `rest_client_requests_total{code="<error>",host="` + u.Host + `"`
	kit.Eventually(t, timeout, "the operator's requests to its API server fail", func() error {
		if err := o.Exited(); err != nil {
			t.Fatal(err) // it will not get better
		}
		code, body, err := get("http://" + o.metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("metrics: %d", code)
		}
		if !strings.Contains(body, series) {
			return fmt.Errorf("no %s} yet", series)
		}
		return nil
	})
}

// stopAPIServer stops env's delivery kube-apiserver (SIGTERM, as a
// control-plane outage) and returns once it refuses connections; the test
// waits for the process to end when it ends.
func stopAPIServer(t *testing.T, env *harness.Env) {
	t.Helper()
	server, err := url.Parse(env.Delivery.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	apiServer := env.Delivery.Env.ControlPlane.APIServer
	stopped := make(chan error, 1)
	go func() { stopped <- apiServer.Stop() }()
	t.Cleanup(func() {
		// envtest kills a server that takes longer than its stop timeout
		// to exit: what the operator saw is the same.
		if err := <-stopped; err != nil {
			t.Logf("stopping the delivery API server: %v", err)
		}
	})
	kit.Eventually(t, 30*time.Second, "the delivery API server refuses connections", func() error {
		conn, err := net.DialTimeout("tcp", server.Host, time.Second)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		return errors.New("it still accepts them")
	})
}

// checkStopsInTime sends the operator SIGTERM and checks that it exits
// cleanly (status 0: its graceful stop completed) within sigtermDeadline,
// having used less than stopCPU since cpuAtStop, the CPU time it had used
// when its API server stopped.
func (o *operatorProcess) checkStopsInTime(t *testing.T, cpuAtStop time.Duration) {
	t.Helper()
	signalled := time.Now()
	if err := syscall.Kill(o.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	timer := time.NewTimer(sigtermDeadline)
	defer timer.Stop()
	select {
	case <-o.Done():
	case <-timer.C:
		cpu, _ := o.CPU()
		// A goroutine dump shows what keeps it, and what runs.
		_ = syscall.Kill(o.Pid(), syscall.SIGQUIT)
		<-o.Done()
		t.Fatalf("the operator still ran %s after SIGTERM, having used %s of CPU since its API server stopped; its busy goroutines:\n%s",
			sigtermDeadline, cpu-cpuAtStop, busyGoroutines(o.out.since(0)))
	}
	took := time.Since(signalled)
	cpu, err := o.CPU()
	if err != nil {
		t.Fatal(err)
	}
	used := cpu - cpuAtStop
	t.Logf("exited %s after SIGTERM, %s of CPU used since the API server stopped", took.Round(time.Millisecond), used)
	if err := o.Err(); err != nil {
		t.Errorf("the operator exited with %v, not 0: its stop did not complete\n%s", err, kit.LastLines(o.out.since(0), 30))
	}
	if used >= stopCPU {
		t.Errorf("the operator used %s of CPU between its API server's stop and its exit, want less than %s: a loop without backoff", used, stopCPU)
	}
}

// busyGoroutines returns the goroutines of a Go goroutine dump in out that
// were running or runnable.
func busyGoroutines(out string) string {
	var busy []string
	for block := range strings.SplitSeq(out, "\n\n") {
		if strings.HasPrefix(block, "goroutine ") && (strings.Contains(block, "[running") || strings.Contains(block, "[runnable")) {
			busy = append(busy, block)
		}
	}
	return strings.Join(busy, "\n\n")
}

// startDelivery starts a delivery cluster (and targets) for one test.
func startDelivery(t *testing.T, opts harness.Options) *harness.Env {
	t.Helper()
	env, err := harness.Start(context.Background(), opts)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping API servers: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// controllers is the number of controllers the operator runs: each logs
// "Starting workers" once its sources have synced.
const controllers = 5

// admin is a delivery cluster user that may do anything.
var admin = envtest.User{Name: "picchu-admin", Groups: []string{"system:masters"}}

// getOnly is a delivery cluster user that may get any object and list or
// watch none.
var getOnly = envtest.User{Name: "picchu-get-only"}

// allowGetOnly lets getOnly get any object of env's delivery cluster.
func allowGetOnly(t *testing.T, env *harness.Env) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: getOnly.Name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: getOnly.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: getOnly.Name}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Delivery.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSIGTERM_EndsAnOperatorStartingWhenItsAPIServerStops runs the
// operator binary as a user that may get objects but not list them, so
// that its caches never sync and it stays in its start-up (as when the API
// server goes away before they synced), with leader election; stops the
// API server, waits until the operator sees it gone, and sends SIGTERM:
// the operator exits cleanly within sigtermDeadline without spinning.
func TestSIGTERM_EndsAnOperatorStartingWhenItsAPIServerStops(t *testing.T) {
	t.Parallel()
	env := startDelivery(t, harness.Options{})
	allowGetOnly(t, env)
	o := startOperatorProcess(t, env, getOnly,
		"--enable-webhooks=false",
		"--enable-leader-election",
		"--leader-election-namespace", env.Namespace,
	)
	o.waitReady(t)
	// Its informers may not list: the caches cannot sync.
	o.waitLogged(t, 0, "forbidden", 1, 60*time.Second)

	cpuAtStop, err := o.CPU()
	if err != nil {
		t.Fatal(err)
	}
	stopAPIServer(t, env)
	o.waitRequestFailed(t, env.Delivery.Config.Host, 60*time.Second)
	o.checkStopsInTime(t, cpuAtStop)
}

// TestSIGTERM_EndsALeaderWhoseAPIServerStopped runs the operator binary
// with leader election and webhooks, leading and connected to a target
// cluster; stops the delivery API server, waits until the operator sees it
// gone, and sends SIGTERM: the operator exits cleanly within sigtermDeadline
// without spinning.
func TestSIGTERM_EndsALeaderWhoseAPIServerStopped(t *testing.T) {
	t.Parallel()
	env := startDelivery(t, harness.Options{Targets: 1})
	certDir := t.TempDir()
	crt, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	webhookPort, err := kit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	o := startOperatorProcess(t, env, admin,
		"--enable-webhooks",
		"--webhook-port", fmt.Sprint(webhookPort),
		"--webhook-cert-dir", certDir,
		"--enable-leader-election",
		"--leader-election-namespace", env.Namespace,
	)
	o.waitReady(t)
	ctx := context.Background()
	kit.Eventually(t, 60*time.Second, "the operator leads and the target cluster is Ready", func() error {
		if err := o.Exited(); err != nil {
			t.Fatal(err) // it will not get better
		}
		if err := kit.LeaseHeld(ctx, env.Delivery.Client, client.ObjectKey{Namespace: env.Namespace, Name: leaderElectionID}); err != nil {
			return err
		}
		return kit.ClusterReady(ctx, env.Delivery.Client, client.ObjectKeyFromObject(env.Targets[0].Cluster))
	})
	o.waitLogged(t, 0, "Starting workers", controllers, 60*time.Second)

	cpuAtStop, err := o.CPU()
	if err != nil {
		t.Fatal(err)
	}
	mark := o.out.size()
	stopAPIServer(t, env)
	o.waitLogged(t, mark, "connection refused", 1, 30*time.Second)
	o.checkStopsInTime(t, cpuAtStop)
}

// TestSIGTERM_EndsAShardedReplicaIdleWithoutItsAPIServer runs the operator
// binary with two shards, holding both; stops the delivery API server,
// leaves the operator idle until it has failed to renew its shards five
// times (four retry periods, 8 s, at least), and sends SIGTERM: the operator
// exits cleanly within sigtermDeadline, having used almost no CPU meanwhile.
func TestSIGTERM_EndsAShardedReplicaIdleWithoutItsAPIServer(t *testing.T) {
	t.Parallel()
	env := startDelivery(t, harness.Options{})
	o := startOperatorProcess(t, env, admin,
		"--enable-webhooks=false",
		"--shards", "2",
		"--leader-election-namespace", env.Namespace,
	)
	o.waitReady(t)
	ctx := context.Background()
	kit.Eventually(t, 60*time.Second, "the operator holds both shards", func() error {
		if err := o.Exited(); err != nil {
			t.Fatal(err) // it will not get better
		}
		for i := range 2 {
			if err := kit.LeaseHeld(ctx, env.Delivery.Client, client.ObjectKey{Namespace: env.Namespace, Name: fmt.Sprintf("picchu-shard-%d", i)}); err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
		}
		return nil
	})
	o.waitLogged(t, 0, "Starting workers", controllers, 60*time.Second)

	cpuAtStop, err := o.CPU()
	if err != nil {
		t.Fatal(err)
	}
	mark := o.out.size()
	stopAPIServer(t, env)
	o.waitLogged(t, mark, `"msg":"balancing shards"`, 5, 30*time.Second)
	o.checkStopsInTime(t, cpuAtStop)
}

// refusingListerWatcher is an API server that refuses connections: each
// call is sent on calls.
type refusingListerWatcher struct{ calls chan<- string }

func (lw refusingListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw refusingListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw refusingListerWatcher) ListWithContext(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	lw.calls <- "list"
	return nil, fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED)
}

func (lw refusingListerWatcher) WatchWithContext(_ context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	lw.calls <- "watch"
	return nil, fmt.Errorf("dial tcp 127.0.0.1:6443: %w", syscall.ECONNREFUSED)
}

// TestWithoutWatchList_ARefusedInformerStopsAtOnce runs a client-go
// reflector, the loop of every informer, under the feature gates main
// sets, against an API server that refuses connections and on a clock
// that never moves: once it has been refused, it waits out its backoff,
// and cancelling its context stops it at once rather than after that wait.
func TestWithoutWatchList_ARefusedInformerStopsAtOnce(t *testing.T) {
	t.Setenv(watchListEnv, "true")
	before := clientfeatures.FeatureGates()
	t.Cleanup(func() { clientfeatures.ReplaceFeatureGates(before) })
	withoutWatchList()
	if clientfeatures.FeatureGates() != before {
		t.Errorf("$%s is set, and the feature gates were replaced all the same", watchListEnv)
	}
	if err := os.Unsetenv(watchListEnv); err != nil {
		t.Fatal(err)
	}
	withoutWatchList()

	calls := make(chan string, 100)
	r := toolscache.NewReflectorWithOptions(refusingListerWatcher{calls: calls}, &corev1.ConfigMap{},
		toolscache.NewStore(toolscache.MetaNamespaceKeyFunc),
		toolscache.ReflectorOptions{Clock: clocktesting.NewFakeClock(time.Now())})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		r.RunWithContext(ctx)
		close(stopped)
	}()
	select {
	case <-calls:
	case <-time.After(30 * time.Second):
		t.Fatal("the reflector asked nothing of its API server within 30s")
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the reflector still ran 5s after its context ended: it sleeps out its backoff, as in watch-list mode")
	}
}
