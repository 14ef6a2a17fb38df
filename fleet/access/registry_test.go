package access_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/fleet/breaker"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// env is a delivery API server and one target, registered with a client
// certificate.
var env *harness.Env

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 1}, harness.KeepEnv(&env))
}

// registration is a Cluster named name pointing at server, and its Secret
// holding authInfo.
func registration(name string, config picchuv1alpha1.ClusterConfig, authInfo string) (*picchuv1alpha1.Cluster, *corev1.Secret) {
	meta := metav1.ObjectMeta{Name: name, Namespace: env.Namespace}
	return &picchuv1alpha1.Cluster{ObjectMeta: meta, Spec: picchuv1alpha1.ClusterSpec{Enabled: true, Config: &config}},
		&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{access.AuthInfoKey: []byte(authInfo)}}
}

// targetUser is the client certificate the harness registered for the target.
func targetUser(t *testing.T) clientcmdv1.AuthInfo {
	t.Helper()
	secret := &corev1.Secret{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(env.Targets[0].Cluster), secret); err != nil {
		t.Fatal(err)
	}
	var user clientcmdv1.AuthInfo
	if err := json.Unmarshal(secret.Data[access.AuthInfoKey], &user); err != nil {
		t.Fatal(err)
	}
	return user
}

func newRegistry(t *testing.T, policy access.Policy) *access.Registry {
	reg := access.NewRegistry(env.Scheme, logr.Discard(), nil)
	reg.Policy = policy
	t.Cleanup(func() {
		for _, name := range []string{"exec", "attacker", "plain"} {
			reg.Remove(types.NamespacedName{Namespace: env.Namespace, Name: name})
		}
	})
	return reg
}

// TestRegistry_ExecCredentialsOnlyWhenAllowed registers the target with an
// exec plugin that prints its client certificate: refused by default,
// naming the Secret, the field and the flag; used when the operator allows
// exec plugins.
func TestRegistry_ExecCredentialsOnlyWhenAllowed(t *testing.T) {
	ctx := context.Background()
	user := targetUser(t)
	credential, err := json.Marshal(map[string]any{
		"apiVersion": "client.authentication.k8s.io/v1",
		"kind":       "ExecCredential",
		"status":     map[string]string{"clientCertificateData": string(user.ClientCertificateData), "clientKeyData": string(user.ClientKeyData)},
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "credential.json")
	if err := os.WriteFile(file, credential, 0o600); err != nil {
		t.Fatal(err)
	}
	authInfo := fmt.Sprintf(`{"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "cat", "args": [%q]}}`, file)
	cluster, secret := registration("exec", *env.Targets[0].Cluster.Spec.Config, authInfo)
	key := client.ObjectKeyFromObject(cluster)

	_, err = newRegistry(t, access.Policy{}).Ensure(ctx, cluster, secret)
	for _, want := range []string{"secret " + key.String(), "auth-info.exec", "--allow-exec-credentials"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("exec plugin without --allow-exec-credentials: error %v, want one saying %q", err, want)
		}
	}

	allowed := newRegistry(t, access.Policy{AllowExec: true})
	if _, err := allowed.Ensure(ctx, cluster, secret); err != nil {
		t.Fatalf("exec plugin with --allow-exec-credentials: %v", err)
	}
	version, _, err := allowed.ServerVersion(key, 10*time.Second)
	if err != nil || version == "" {
		t.Fatalf("asking the target for its version with the exec plugin's certificate: %q %v", version, err)
	}
}

// recorder is a TLS server that records the credentials each request
// carries: the server of someone who registers a Cluster to steal them.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
	certs int
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		if a := req.Header.Get("Authorization"); a != "" {
			r.auths = append(r.auths, a)
		}
		if req.TLS != nil {
			r.certs += len(req.TLS.PeerCertificates)
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"major": "1", "minor": "36", "gitVersion": "v1.36.0-recorder"}`)
	}))
	r.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12}
	r.StartTLS()
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) seen() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...), r.certs
}

func (r *recorder) config() picchuv1alpha1.ClusterConfig {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
	return picchuv1alpha1.ClusterConfig{Server: r.URL, CertificateAuthorityData: ca}
}

// TestRegistry_NeverSendsTheOperatorsFilesOrIdentity registers a Cluster
// pointing at a server that records credentials, with Secrets naming the
// operator's token file, its client certificate files, nothing at all (in
// an environment with a kubeconfig and a pod's service account variables),
// and an exec plugin printing the token file: each is refused, and the
// server never sees the operator's token, kubeconfig token or certificate.
// A Secret with an inline token reaches it with that token only.
func TestRegistry_NeverSendsTheOperatorsFilesOrIdentity(t *testing.T) {
	ctx := context.Background()
	srv := newRecorder(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	// The operator's own secrets: a service-account token and a client
	// certificate on its file system, and a kubeconfig for the same server.
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tokenFile := write("token", []byte("operator-service-account-token"))
	certFile := write("tls.crt", env.Delivery.Config.CertData)
	keyFile := write("tls.key", env.Delivery.Config.KeyData)
	kubeconfig := write("kubeconfig", fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: operator-kubeconfig-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL))
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("KUBERNETES_SERVICE_HOST", u.Hostname())
	t.Setenv("KUBERNETES_SERVICE_PORT", u.Port())

	reg := newRegistry(t, access.Policy{})
	key := types.NamespacedName{Namespace: env.Namespace, Name: "attacker"}
	for _, tt := range []struct{ authInfo, field string }{
		{fmt.Sprintf(`{"tokenFile": %q}`, tokenFile), "auth-info.tokenFile"},
		{fmt.Sprintf(`{"client-certificate": %q, "client-key": %q}`, certFile, keyFile), "auth-info.client-certificate"},
		{`{}`, "auth-info holds no credentials"},
		{fmt.Sprintf(`{"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "cat", "args": [%q]}}`, tokenFile), "auth-info.exec"},
	} {
		cluster, secret := registration("attacker", srv.config(), tt.authInfo)
		_, err := reg.Ensure(ctx, cluster, secret)
		if err == nil || !strings.Contains(err.Error(), tt.field) || !strings.Contains(err.Error(), "secret "+key.String()) {
			t.Errorf("%s: error %v, want one naming secret %s and %s", tt.authInfo, err, key, tt.field)
		}
		if err == nil {
			// What the operator would then send.
			_, _, _ = reg.ServerVersion(key, 5*time.Second)
			reg.Remove(key)
		}
	}
	if auths, certs := srv.seen(); len(auths) > 0 || certs > 0 {
		t.Errorf("the Cluster's server received the operator's credentials: authorization %q, %d client certificates", auths, certs)
	}

	cluster, secret := registration("attacker", srv.config(), `{"token": "the-clusters-own-token"}`)
	if _, err := reg.Ensure(ctx, cluster, secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reg.ServerVersion(key, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	auths, certs := srv.seen()
	ok := len(auths) > 0 && certs == 0
	for _, a := range auths {
		ok = ok && a == "Bearer the-clusters-own-token"
	}
	if !ok {
		t.Errorf("with an inline token the server received authorization %q and %d client certificates, want only that token", auths, certs)
	}
}

// TestRegistry_PlainHTTPOnlyWhenAllowedAndWithoutCredentials reaches the
// target through a local proxy that serves plain HTTP and adds its own
// credentials, as "kubectl proxy" does: refused unless allowPlainHTTP is
// set, refused with credentials in auth-info, and working without any,
// none of which reach the proxy.
func TestRegistry_PlainHTTPOnlyWhenAllowedAndWithoutCredentials(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	upstream, err := url.Parse(target.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(target.Config)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auths []string
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			auths = append(auths, a)
		}
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	reg := newRegistry(t, access.Policy{})
	key := types.NamespacedName{Namespace: env.Namespace, Name: "plain"}
	cluster, secret := registration("plain", picchuv1alpha1.ClusterConfig{Server: srv.URL}, `{}`)
	if _, err := reg.Ensure(ctx, cluster, secret); err == nil || !strings.Contains(err.Error(), "allowPlainHTTP") {
		t.Errorf("http:// server without allowPlainHTTP: error %v, want one naming allowPlainHTTP", err)
	}
	cluster, secret = registration("plain", picchuv1alpha1.ClusterConfig{Server: srv.URL, AllowPlainHTTP: true}, `{"token": "would-go-in-the-clear"}`)
	if _, err := reg.Ensure(ctx, cluster, secret); err == nil || !strings.Contains(err.Error(), "must hold no credentials") {
		t.Errorf("credentials over plain HTTP: error %v, want a refusal", err)
	}
	cluster, secret = registration("plain", picchuv1alpha1.ClusterConfig{Server: srv.URL, AllowPlainHTTP: true}, `{}`)
	if _, err := reg.Ensure(ctx, cluster, secret); err != nil {
		t.Fatalf("plain HTTP without credentials: %v", err)
	}
	if version, _, err := reg.ServerVersion(key, 10*time.Second); err != nil || version == "" {
		t.Fatalf("asking the target for its version through the proxy: %q %v", version, err)
	}
	if !access.PlainHTTP(cluster) {
		t.Errorf("PlainHTTP is false for an allowed http:// server")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) > 0 {
		t.Errorf("credentials sent over plain HTTP: %q", auths)
	}
}

// TestRegistry_TellsWhatItForgets registers the target, changes its
// settings, and removes it: each client the registry drops is told to
// OnForget, so that what is kept per client (the operator's memory of what
// it applied there) goes with it, and nothing is told while it stays.
func TestRegistry_TellsWhatItForgets(t *testing.T) {
	ctx := context.Background()
	user, err := json.Marshal(targetUser(t))
	if err != nil {
		t.Fatal(err)
	}
	cluster, secret := registration("forgotten", *env.Targets[0].Cluster.Spec.Config, string(user))
	key := client.ObjectKeyFromObject(cluster)
	reg := access.NewRegistry(env.Scheme, logr.Discard(), nil)
	var mu sync.Mutex
	var told []types.NamespacedName
	reg.OnForget(func(k types.NamespacedName) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, k)
	})
	toldSoFar := func() []types.NamespacedName {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(told)
	}
	for _, step := range []struct {
		what string
		do   func() error
		want int
	}{
		{"registered", func() error { _, err := reg.Ensure(ctx, cluster, secret); return err }, 0},
		{"registered again unchanged", func() error { _, err := reg.Ensure(ctx, cluster, secret); return err }, 0},
		{"its server changed", func() error {
			cluster.Spec.Config.Server = strings.Replace(cluster.Spec.Config.Server, "127.0.0.1", "localhost", 1)
			_, err := reg.Ensure(ctx, cluster, secret)
			return err
		}, 1},
		{"removed", func() error { reg.Remove(key); return nil }, 2},
		{"removed again", func() error { reg.Remove(key); return nil }, 2},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		got := toldSoFar()
		if len(got) != step.want || (len(got) > 0 && got[len(got)-1] != key) {
			t.Errorf("%s: told %v, want %d times %s", step.what, got, step.want, key)
		}
	}
}

// TestRegistry_AHungAPIServerOpensItsBreaker registers a Cluster whose API
// server accepts requests and never answers: after three health checks
// time out the cluster's breaker is open, and the next check fails at once
// without reaching the server; removing the Cluster drops the breaker.
func TestRegistry_AHungAPIServerOpensItsBreaker(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	received := 0
	hang := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		received++
		mu.Unlock()
		select {
		case <-hang:
		case <-req.Context().Done():
		}
	}))
	srv.StartTLS()
	t.Cleanup(func() { close(hang); srv.Close() })
	count := func() int { mu.Lock(); defer mu.Unlock(); return received }
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cluster, secret := registration("hung", picchuv1alpha1.ClusterConfig{Server: srv.URL, CertificateAuthorityData: ca}, `{"token": "t"}`)
	reg := newRegistry(t, access.Policy{})
	if _, err := reg.Ensure(ctx, cluster, secret); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(cluster)
	for i := range 3 {
		if _, _, err := reg.ServerVersion(key, 100*time.Millisecond); err == nil || errors.Is(err, breaker.ErrOpen) {
			t.Fatalf("check %d: error %v, want a timeout", i+1, err)
		}
	}
	health, ok := reg.Health(key)
	if !ok || health.State != breaker.Open || health.LastError == "" {
		t.Fatalf("health %+v (%t), want an open breaker with the last error", health, ok)
	}
	before := count()
	if _, _, err := reg.ServerVersion(key, 10*time.Second); !errors.Is(err, breaker.ErrOpen) {
		t.Errorf("check with the breaker open: error %v, want breaker.ErrOpen at once", err)
	}
	if after := count(); after != before {
		t.Errorf("the server received %d requests while the breaker was open", after-before)
	}
	reg.Remove(key)
	if _, ok := reg.Health(key); ok {
		t.Errorf("the breaker outlived its Cluster")
	}
}

// recoveriesOf reads picchu_cluster_recoveries_total of the cluster key,
// by outcome, from reg.
func recoveriesOf(t *testing.T, reg *prometheus.Registry, key types.NamespacedName) map[string]int {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "picchu_cluster_recoveries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cluster"] == key.String() {
				out[labels["outcome"]] = int(m.GetCounter().GetValue())
			}
		}
	}
	return out
}

// TestRegistry_AFlappingClusterIsRebuiltWithBackoff registers the target
// through its proxy and makes it flap: stopped until its breaker opens,
// started until the breaker closes. The first recovery rebuilds the
// cluster's client and caches; the next ones rebuild them only once the
// backoff since the last rebuild has passed (10 s, doubling), leaving the
// informers to their own retries otherwise; a cluster that stayed healthy
// for RebuildResetAfter is rebuilt again after the shortest backoff. Time
// is the registry's clock, moved by the test.
func TestRegistry_AFlappingClusterIsRebuiltWithBackoff(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[0]
	user, err := json.Marshal(targetUser(t))
	if err != nil {
		t.Fatal(err)
	}
	cluster, secret := registration("flapping", *target.Cluster.Spec.Config, string(user))
	key := client.ObjectKeyFromObject(cluster)

	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	step := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	reg := access.NewRegistry(env.Scheme, logr.Discard(), nil)
	// Each failure opens the breaker, for a millisecond.
	reg.Breaker = breaker.Policy{Failures: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	reg.Now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	metrics := prometheus.NewRegistry()
	if err := access.RegisterMetrics(metrics); err != nil {
		t.Fatal(err)
	}
	var rebuiltMu sync.Mutex
	rebuilt := 0
	reg.OnForget(func(k types.NamespacedName) {
		rebuiltMu.Lock()
		defer rebuiltMu.Unlock()
		if k == key {
			rebuilt++
		}
	})
	if _, err := reg.Ensure(ctx, cluster, secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := target.Proxy.Start(); err != nil {
			t.Error(err)
		}
		reg.Remove(key)
	})

	// flap takes the cluster away until its breaker opens, and brings it
	// back until the breaker closes.
	flap := func(what string) {
		t.Helper()
		if err := target.Proxy.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := reg.ServerVersion(key, 5*time.Second); err == nil {
			t.Fatalf("%s: the cluster answered through its stopped proxy", what)
		}
		if h, _ := reg.Health(key); h.State != breaker.Open {
			t.Fatalf("%s: breaker %s after a failed check, want open", what, h.State)
		}
		if err := target.Proxy.Start(); err != nil {
			t.Fatal(err)
		}
		step(time.Millisecond) // the breaker's backoff
		if _, _, err := reg.ServerVersion(key, 5*time.Second); err != nil {
			t.Fatalf("%s: the cluster is back and its check failed: %v", what, err)
		}
		if h, _ := reg.Health(key); h.State != breaker.Closed {
			t.Fatalf("%s: breaker %s after a successful check, want closed", what, h.State)
		}
	}
	for _, tc := range []struct {
		what string
		wait time.Duration // healthy before the flap
		// want are the recoveries so far: rebuilt, and left to backoff.
		rebuilt, backoff int
	}{
		{"first recovery", 0, 1, 0},
		{"at once again", 0, 1, 1},
		{"10 s after the first rebuild", access.RebuildMinBackoff, 2, 1},
		{"10 s after the second, whose backoff is 20 s", access.RebuildMinBackoff, 2, 2},
		{"20 s after the second", access.RebuildMinBackoff, 3, 2},
		{"after staying healthy long", access.RebuildResetAfter, 4, 2},
		{"10 s after, the backoff being reset", access.RebuildMinBackoff, 5, 2},
	} {
		step(tc.wait)
		flap(tc.what)
		// The breaker decides as it closes, within the check.
		got := recoveriesOf(t, metrics, key)
		if got["rebuilt"] != tc.rebuilt || got["backoff"] != tc.backoff {
			t.Fatalf("%s: recoveries %v, want %d rebuilt and %d left to backoff", tc.what, got, tc.rebuilt, tc.backoff)
		}
		kit.Eventually(t, 10*time.Second, tc.what+": the cluster's clients built again as often", func() error {
			rebuiltMu.Lock()
			defer rebuiltMu.Unlock()
			if rebuilt != tc.rebuilt {
				return fmt.Errorf("rebuilt %d times", rebuilt)
			}
			return nil
		})
	}
}
