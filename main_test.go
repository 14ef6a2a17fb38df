package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// freePort returns a loopback address with a port nothing listens on.
func freePort(t *testing.T) string {
	t.Helper()
	port, err := kit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec // test URL on loopback
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestRun_ServesProbesMetricsAndLeadsAgainstADeliveryCluster runs the
// operator as "picchu --kubeconfig FILE" against a real API server, without
// webhooks and with leader election, and checks its probes, its metrics, its
// leader lease and that it connects to a registered target cluster, then
// stops it. The Datadog Secret it names does not exist: that is no reason
// not to start.
func TestRun_ServesProbesMetricsAndLeadsAgainstADeliveryCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := harness.Start(ctx, harness.Options{Targets: 1})
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping API server: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := env.Delivery.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["delivery"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["delivery"] = &clientcmdapi.Context{Cluster: "delivery", AuthInfo: "admin"}
	kc.CurrentContext = "delivery"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	metricsAddr, probeAddr, pprofAddr := freePort(t), freePort(t), freePort(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--kubeconfig", kubeconfig,
			"--namespaces", env.Namespace,
			"--enable-webhooks=false",
			"--enable-leader-election",
			"--leader-election-namespace", env.Namespace,
			"--metrics-addr", metricsAddr,
			"--health-probe-bind-address", probeAddr,
			"--pprof-bind-address", pprofAddr,
			// Missing: the builds Datadog would judge are unobserved, and
			// the operator runs.
			"--datadog-secret", env.Namespace + "/datadog-keys",
		})
	}()

	kit.Eventually(t, 30*time.Second, "readyz answers 200", func() error {
		select {
		case err := <-done:
			return fmt.Errorf("run returned early: %w", err)
		default:
		}
		code, body, err := get("http://" + probeAddr + "/readyz")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %s", code, body)
		}
		return nil
	})
	if code, _, err := get("http://" + probeAddr + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("healthz: %d %v", code, err)
	}
	kit.Eventually(t, 30*time.Second, "leader lease is held", func() error {
		return kit.LeaseHeld(ctx, env.Delivery.Client, client.ObjectKey{Namespace: env.Namespace, Name: leaderElectionID})
	})
	kit.Eventually(t, 30*time.Second, "the target cluster is Ready", func() error {
		return kit.ClusterReady(ctx, env.Delivery.Client, client.ObjectKeyFromObject(env.Targets[0].Cluster))
	})
	code, body, err := get("http://" + metricsAddr + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("metrics: %d %v", code, err)
	}
	if !strings.Contains(body, "leader_election_master_status") {
		t.Errorf("metrics lack controller-runtime's leader election gauge:\n%.500s", body)
	}
	// The profiler, with contention sampled, for a benchmark to read.
	for _, profile := range []string{"profile?seconds=1", "block", "mutex"} {
		if code, body, err := get("http://" + pprofAddr + "/debug/pprof/" + profile); err != nil || code != http.StatusOK || body == "" {
			t.Errorf("pprof %s: %d %v", profile, code, err)
		}
	}
	// The waits on the rate limits of the delivery cluster's client and of
	// the target's, which the Cluster controller has used by now.
	for _, cluster := range []string{"delivery", env.Namespace + "/" + env.Targets[0].Name} {
		if series := `picchu_client_throttle_wait_seconds_count{cluster="` + cluster + `"}`; !strings.Contains(body, series) {
			t.Errorf("metrics lack %s", series)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	// Stopped, it hands leadership over at once rather than leave the
	// next replica waiting for the lease to run out.
	lease := &coordinationv1.Lease{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKey{Namespace: env.Namespace, Name: leaderElectionID}, lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("the leader lease still names %q after the operator stopped", *h)
	}
}

func TestParseFlags_RejectsBadValues(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "picchu")
	for _, args := range [][]string{
		{"--sync-period-seconds", "0"},
		{"--concurrent-revisions", "0"},
		{"--concurrent-release-managers", "-1"},
		{"--no-such-flag"},
		{"extra-argument"},
		{"--datadog-secret", "no-namespace"},
		{"--keep-done-builds", "0"},
		{"--kube-api-qps", "0"},
		{"--kube-api-burst", "0"},
		{"--cluster-api-qps", "-1"},
		{"--cluster-api-burst", "0"},
		{"--namespaces", "picchu", "--datadog-secret", "elsewhere/datadog"},
		{"--shards", "-1"},
		{"--shards", "2", "--enable-leader-election"},
		{"--shards", "2", "--shard-renew-deadline", "20s"},
		{"--shards", "2", "--shard-retry-period", "0s"},
		{"--dev-routes-service-port", "0"},
		{"--dev-routes-service-port", "65536"},
		{"--manage-route53=maybe"},
		{"--slack-query-ttl", "soon"},
		{"--alertmanager-address", "alertmanager:9093"},
		{"--image-registry-allowed-hosts", "https://auth.docker.io/token"},
		{"--image-registry-allowed-hosts", "*.example.com:443"},
		{"--allow-cross-namespace-sources", "Not_A_Namespace"},
		{"--namespaces", "picchu,shared", "--allow-cross-namespace-sources", "shared,elsewhere"},
		{"--max-silence", "5m"},
		{"--prometheus-cluster-label", "cluster-name"},
		{"--instance-id", "delivery east"},
		{"--instance-id", "a]"},
		{"--protected-namespaces", "-kube-system"},
		{"--protected-namespaces", "-istio-system"},
		{"--protected-namespaces", "-team-a"},
		{"--app-namespace-policy", "team-a"},
		{"--app-namespace-policy", "team-a=*"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) accepted bad input", args)
		}
	}
	c, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.operator.SyncPeriod != 15*time.Minute || c.operator.ConcurrentRevisions != 20 ||
		c.operator.ConcurrentReleaseManagers != 50 || c.metricsAddr != ":8383" ||
		c.operator.PrometheusQueryTTL != 10*time.Second || c.operator.HumaneReleasesDisabled ||
		c.operator.ServiceLevelsNamespace != "service-level-objectives" || c.enableLeaderElection ||
		c.operator.MaxSilence != 2*time.Hour {
		t.Errorf("defaults differ from the documented ones: %+v", c)
	}
	if want := []string{"auth.docker.io", "production.cloudflare.docker.com", "pkg-containers.githubusercontent.com"}; !slices.Equal(c.operator.ImageRegistryAllowedHosts, want) {
		t.Errorf("image registry hosts allowed by default: %q, want Docker Hub's and GHCR's %q", c.operator.ImageRegistryAllowedHosts, want)
	}
	c, err = parseFlags([]string{"--image-registry-allowed-hosts", "auth.docker.io, *.S3.amazonaws.com,tokens.example.com:8443"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"auth.docker.io", "*.s3.amazonaws.com", "tokens.example.com:8443"}; !slices.Equal(c.operator.ImageRegistryAllowedHosts, want) {
		t.Errorf("image registry hosts %q, want %q", c.operator.ImageRegistryAllowedHosts, want)
	}
	if len(c.operator.CrossNamespaceSources) != 0 {
		t.Errorf("cross-namespace sources %q allowed by default, want none", c.operator.CrossNamespaceSources)
	}
	c, err = parseFlags([]string{"--namespaces", "picchu,shared", "--allow-cross-namespace-sources", "shared"})
	if err != nil || !slices.Equal(c.operator.CrossNamespaceSources, []string{"shared"}) {
		t.Errorf("--allow-cross-namespace-sources shared: %v, %+v", err, c)
	}
	if c, err = parseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if c.shards.n != 0 || c.shards.leaseDuration != 15*time.Second || c.shards.renewDeadline != 10*time.Second || c.shards.retryPeriod != 2*time.Second {
		t.Errorf("shards: %+v, want none, with controller-runtime's lease timings", c.shards)
	}
	if c.kubeAPIQPS != 200 || c.kubeAPIBurst != 400 || c.operator.ClusterQPS != 200 || c.operator.ClusterBurst != 400 {
		t.Errorf("rate limits: delivery %v/%d, clusters %v/%d; want 200/400 for both",
			c.kubeAPIQPS, c.kubeAPIBurst, c.operator.ClusterQPS, c.operator.ClusterBurst)
	}
	if !slices.Equal(c.operator.Namespaces, []string{"picchu"}) {
		t.Errorf("namespaces %q, want $POD_NAMESPACE's", c.operator.Namespaces)
	}
}

// TestParseFlags_NamespacesAreNeverEmpty checks that the operator reads
// Secrets cluster-wide only when told "--namespaces=*": without
// --namespaces, $POD_NAMESPACE or a pod's namespace, it refuses to start
// rather than read every Secret of the cluster.
func TestParseFlags_NamespacesAreNeverEmpty(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	inClusterNamespace = filepath.Join(t.TempDir(), "namespace")
	if _, err := parseFlags(nil); err == nil || !strings.Contains(err.Error(), "--namespaces is empty") {
		t.Errorf("no namespace anywhere: got %v, want --namespaces refused as empty", err)
	}
	if _, err := parseFlags([]string{"--namespaces", " "}); err == nil {
		t.Error("--namespaces of spaces was accepted")
	}
	c, err := parseFlags([]string{"--namespaces", "*"})
	if err != nil || c.operator.Namespaces != nil {
		t.Errorf(`--namespaces "*": %v, namespaces %q; want every namespace (nil)`, err, c.operator.Namespaces)
	}
	if err := os.WriteFile(inClusterNamespace, []byte("delivery\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = parseFlags(nil)
	if err != nil || !slices.Equal(c.operator.Namespaces, []string{"delivery"}) {
		t.Errorf("in a pod of namespace delivery: %v, namespaces %q; want the pod's", err, c.operator.Namespaces)
	}
}

// originalCommandLine is the command line the original operator's
// Deployment passes (every flag of the original, as its manifests spell
// them), with the values a production install gives them.
var originalCommandLine = []string{
	"--enable-leader-election",
	"--sync-period-seconds=15",
	"--prometheus-query-address=http://thanos-query.monitoring.svc.cluster.local:9090",
	"--prometheus-query-ttl=10s",
	"--prometheus-enabled=true",
	"--slack-query-ttl=120s",
	"--humane-releases-enabled=true",
	"--service-levels-namespace=service-level-objectives",
	"--service-levels-fleet=delivery",
	"--manage-route53=false",
	"--concurrent-revisions=20",
	"--concurrent-release-managers=50",
	"--dev-routes-service-host=dev-router.dev.svc.cluster.local",
	"--dev-routes-service-port=8080",
	"--cluster-prometheus-address=http://prometheus.monitoring.svc.cluster.local:9090",
	"--metrics-addr=:8383",
}

// TestParseFlags_TheOriginalsCommandLine checks that the original's command
// line starts Picchu, each flag setting what it set in the original.
func TestParseFlags_TheOriginalsCommandLine(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "picchu") // as a pod's namespace gives it
	c, err := parseFlags(originalCommandLine)
	if err != nil {
		t.Fatalf("the original's command line is refused: %v", err)
	}
	o := c.operator
	checks := []struct {
		flag      string
		got, want any
	}{
		{"--enable-leader-election", c.enableLeaderElection, true},
		{"--sync-period-seconds", o.SyncPeriod, 15 * time.Second},
		{"--prometheus-query-address", o.PrometheusQueryAddress, "http://thanos-query.monitoring.svc.cluster.local:9090"},
		{"--prometheus-query-ttl", o.PrometheusQueryTTL, 10 * time.Second},
		{"--humane-releases-enabled", o.HumaneReleasesDisabled, false},
		{"--service-levels-namespace", o.ServiceLevelsNamespace, "service-level-objectives"},
		{"--concurrent-revisions", o.ConcurrentRevisions, 20},
		{"--concurrent-release-managers", o.ConcurrentReleaseManagers, 50},
		{"--dev-routes-service-host", o.DevRoutesServiceHost, "dev-router.dev.svc.cluster.local"},
		{"--dev-routes-service-port", o.DevRoutesServicePort, 8080},
		{"--cluster-prometheus-address", o.ClusterPrometheusAddress, "http://prometheus.monitoring.svc.cluster.local:9090"},
		{"--metrics-addr", c.metricsAddr, ":8383"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.flag, ch.got, ch.want)
		}
	}
	if want := []string{"manage-route53", "service-levels-fleet", "slack-query-ttl"}; !slices.Equal(sorted(c.ignored), want) {
		t.Errorf("ignored flags set: %v, want %v", c.ignored, want)
	}

	// The original's switches, the other way round.
	c, err = parseFlags([]string{"--prometheus-enabled=false", "--prometheus-query-address=http://thanos:9090",
		"--humane-releases-enabled=false", "--service-levels-namespace=", "--manage-route53"})
	if err != nil {
		t.Fatal(err)
	}
	if c.operator.PrometheusQueryAddress != "" {
		t.Errorf("--prometheus-enabled=false kept the query address %q: Prometheus checks stay on", c.operator.PrometheusQueryAddress)
	}
	if !c.operator.HumaneReleasesDisabled {
		t.Error("--humane-releases-enabled=false did not turn the kill switch on")
	}
	if c.operator.ServiceLevelsNamespace != "" {
		t.Errorf("--service-levels-namespace= left %q: service levels stay on", c.operator.ServiceLevelsNamespace)
	}

	// The original's defaults where Picchu has the same.
	c, err = parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.operator.DevRoutesServicePort != 80 || c.operator.DevRoutesServiceHost != "" || c.operator.ClusterPrometheusAddress != "" {
		t.Errorf("dev routes %q:%d, cluster Prometheus %q; want no host, port 80 and no address",
			c.operator.DevRoutesServiceHost, c.operator.DevRoutesServicePort, c.operator.ClusterPrometheusAddress)
	}
	if len(c.ignored) != 0 {
		t.Errorf("ignored flags recorded though none was set: %v", c.ignored)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestLogIgnored_NamesEachIgnoredFlag checks that each flag of the original
// that Picchu ignores is logged at start-up, named, as ignored, and only
// when the command line sets it.
func TestLogIgnored_NamesEachIgnoredFlag(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "picchu") // as a pod's namespace gives it
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{originalCommandLine, []string{"manage-route53", "service-levels-fleet", "slack-query-ttl"}},
		{[]string{"--manage-route53"}, []string{"manage-route53"}},
		{[]string{"--slack-query-ttl", "2m"}, []string{"slack-query-ttl"}},
		{[]string{"--enable-leader-election"}, nil},
	} {
		c, err := parseFlags(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		var out bytes.Buffer
		c.logIgnored(zap.New(zap.WriteTo(&out)))
		logged := out.String()
		for _, f := range ignoredFlags {
			notice := `"flag --` + f.name + ` is ignored: `
			switch {
			case slices.Contains(tc.want, f.name) && !strings.Contains(logged, notice):
				t.Errorf("%q: no notice that --%s is ignored in:\n%s", tc.args, f.name, logged)
			case slices.Contains(tc.want, f.name) && !strings.Contains(logged, `"flag":"`+f.name+`"`):
				t.Errorf("%q: the notice for --%s does not carry flag=%s:\n%s", tc.args, f.name, f.name, logged)
			case !slices.Contains(tc.want, f.name) && strings.Contains(logged, notice):
				t.Errorf("%q: --%s is said to be ignored though it was not set:\n%s", tc.args, f.name, logged)
			}
		}
	}
}

// TestParseFlags_NamespacePolicies: --protected-namespaces removes an
// add-on's namespace and adds a prefix; --app-namespace-policy keeps each
// delivery namespace's apps to namespaces named after it. The operator
// gets both, and its own namespace.
func TestParseFlags_NamespacePolicies(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "picchu")
	c, err := parseFlags([]string{"--protected-namespaces", "-monitoring,team-*", "--app-namespace-policy", "*={namespace}-*"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.operator
	if !slices.Equal(o.ProtectedNamespaces, []string{"-monitoring", "team-*"}) || o.OwnNamespace != "picchu" {
		t.Errorf("protected %v, own namespace %q", o.ProtectedNamespaces, o.OwnNamespace)
	}
	if got := o.AppNamespacePolicy.Patterns("payments"); !slices.Equal(got, []string{"payments-*"}) {
		t.Errorf("payments' apps may use %v, want payments-*", got)
	}
}
