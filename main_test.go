package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
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

	metricsAddr, probeAddr := freePort(t), freePort(t)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"--kubeconfig", kubeconfig,
			"--enable-webhooks=false",
			"--enable-leader-election",
			"--leader-election-namespace", env.Namespace,
			"--metrics-addr", metricsAddr,
			"--health-probe-bind-address", probeAddr,
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
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: env.Namespace, Name: leaderElectionID}
		if err := env.Delivery.Client.Get(ctx, key, lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease has no holder")
		}
		return nil
	})
	kit.Eventually(t, 30*time.Second, "the target cluster is Ready", func() error {
		cl := &picchuv1alpha1.Cluster{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKeyFromObject(env.Targets[0].Cluster), cl); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(cl.Status.Conditions, picchuv1alpha1.ConditionReady) {
			return fmt.Errorf("conditions %+v", cl.Status.Conditions)
		}
		return nil
	})
	code, body, err := get("http://" + metricsAddr + "/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("metrics: %d %v", code, err)
	}
	if !strings.Contains(body, "leader_election_master_status") {
		t.Errorf("metrics lack controller-runtime's leader election gauge:\n%.500s", body)
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
		c.operator.ServiceLevelsNamespace != "service-level-objectives" || c.enableLeaderElection {
		t.Errorf("defaults differ from the documented ones: %+v", c)
	}
	if c.shards.n != 0 || c.shards.leaseDuration != 15*time.Second || c.shards.renewDeadline != 10*time.Second || c.shards.retryPeriod != 2*time.Second {
		t.Errorf("shards: %+v, want none, with controller-runtime's lease timings", c.shards)
	}
	if c.kubeAPIQPS != 50 || c.kubeAPIBurst != 300 || c.operator.ClusterQPS != 50 || c.operator.ClusterBurst != 300 {
		t.Errorf("rate limits: delivery %v/%d, clusters %v/%d; want 50/300 (Flux's) for both",
			c.kubeAPIQPS, c.kubeAPIBurst, c.operator.ClusterQPS, c.operator.ClusterBurst)
	}
}
