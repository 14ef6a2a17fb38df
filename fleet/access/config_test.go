package access

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

func newCluster(config *picchuv1alpha1.ClusterConfig) *picchuv1alpha1.Cluster {
	return &picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "picchu"},
		Spec:       picchuv1alpha1.ClusterSpec{Enabled: true, Config: config},
	}
}

func secret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "picchu"}, Data: data}
}

func authInfo(s string) *corev1.Secret { return secret(map[string][]byte{AuthInfoKey: []byte(s)}) }

func Test_RESTConfig(t *testing.T) {
	server := &picchuv1alpha1.ClusterConfig{Server: "https://10.0.0.1:6443", CertificateAuthorityData: []byte("ca")}

	token, err := AuthInfoJSON(&clientcmdapi.AuthInfo{Token: "s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(newCluster(server), secret(map[string][]byte{AuthInfoKey: token}))
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if cfg.Host != server.Server || cfg.BearerToken != "s3cr3t" || string(cfg.CAData) != "ca" {
		t.Errorf("token config = host %q token %q ca %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}

	certs, err := AuthInfoJSON(&clientcmdapi.AuthInfo{ClientCertificateData: []byte("cert"), ClientKeyData: []byte("key")})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = RESTConfig(newCluster(server), secret(map[string][]byte{AuthInfoKey: certs}))
	if err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" {
		t.Errorf("client certificate config = cert %q key %q", cfg.CertData, cfg.KeyData)
	}

	// The JSON users write by hand, with kubeconfig's key names.
	cfg, err = RESTConfig(newCluster(server), authInfo(`{"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}`))
	if err != nil || string(cfg.CertData) != "cert" || string(cfg.KeyData) != "key" {
		t.Errorf("hand-written client certificate: %v", err)
	}

	exec := `{"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token", "args": ["--cluster", "a"]}}`
	cfg, err = Policy{AllowExec: true}.RESTConfig(newCluster(server), authInfo(exec))
	if err != nil {
		t.Fatalf("exec, allowed: %v", err)
	}
	if cfg.ExecProvider == nil || cfg.ExecProvider.Command != "get-token" || cfg.ExecProvider.InteractiveMode != clientcmdapi.NeverExecInteractiveMode {
		t.Errorf("exec config = %+v, want get-token, never interactive", cfg.ExecProvider)
	}
}

// Test_RESTConfig_RejectsWhatReachesTheOperatorsFilesOrIdentity: every
// field that makes the operator read its own files, use its own identity,
// or send credentials in the clear is rejected, naming the Cluster, the
// Secret and the field.
func Test_RESTConfig_RejectsWhatReachesTheOperatorsFilesOrIdentity(t *testing.T) {
	https := &picchuv1alpha1.ClusterConfig{Server: "https://10.0.0.1:6443"}
	plain := &picchuv1alpha1.ClusterConfig{Server: "http://127.0.0.1:8001", AllowPlainHTTP: true}
	tests := []struct {
		name     string
		config   *picchuv1alpha1.ClusterConfig
		authInfo string
		want     string
	}{
		{"token file", https, `{"tokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token"}`, "auth-info.tokenFile is not accepted"},
		{"token file beside a token", https, `{"token": "x", "tokenFile": "/etc/token"}`, "auth-info.tokenFile is not accepted"},
		{"client certificate file", https, `{"client-certificate": "/etc/tls.crt", "client-key-data": "a2V5"}`, "auth-info.client-certificate is not accepted"},
		{"client key file", https, `{"client-certificate-data": "Y2VydA==", "client-key": "/etc/tls.key"}`, "auth-info.client-key is not accepted"},
		{"auth provider", https, `{"auth-provider": {"name": "gcp"}}`, "auth-info.auth-provider is not accepted"},
		{"basic auth", https, `{"username": "u", "password": "p"}`, "auth-info.username and auth-info.password are not accepted"},
		{"impersonation", https, `{"token": "x", "as": "system:admin"}`, "auth-info.as"},
		{"impersonated groups", https, `{"token": "x", "as-groups": ["system:masters"]}`, "auth-info.as-groups"},
		{"exec without the flag", https, `{"exec": {"command": "cat", "args": ["/var/run/secrets/kubernetes.io/serviceaccount/token"]}}`, "--allow-exec-credentials"},
		{"no credentials", https, `{}`, "auth-info holds no credentials"},
		{"certificate without key", https, `{"client-certificate-data": "Y2VydA=="}`, "go together"},
		{"two kinds", https, `{"token": "x", "client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}`, "more than one kind"},
		{"a whole kubeconfig user entry", https, `{"name": "admin", "user": {"token": "x"}}`, `unknown field "name"`},
		{"credentials over plain HTTP", plain, `{"token": "x"}`, "must hold no credentials"},
		{"plain HTTP not allowed", &picchuv1alpha1.ClusterConfig{Server: "http://10.0.0.1:8080"}, `{"token": "x"}`, "spec.config.allowPlainHTTP"},
		{"password in the URL", &picchuv1alpha1.ClusterConfig{Server: "https://u:p@10.0.0.1:6443"}, `{"token": "x"}`, "user name or password"},
		{"another scheme", &picchuv1alpha1.ClusterConfig{Server: "file:///etc/passwd"}, `{"token": "x"}`, "has no host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := RESTConfig(newCluster(tt.config), authInfo(tt.authInfo))
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "cluster picchu/a") {
				t.Errorf("error = %v, want one naming cluster picchu/a and saying %q", err, tt.want)
			}
			if strings.Contains(tt.want, "auth-info") && !strings.Contains(err.Error(), "secret picchu/a") {
				t.Errorf("error = %v, want it to name secret picchu/a", err)
			}
		})
	}
}

func Test_RESTConfig_PlainHTTPSendsNoCredentials(t *testing.T) {
	cfg, err := RESTConfig(newCluster(&picchuv1alpha1.ClusterConfig{
		Server: "http://127.0.0.1:8001", CertificateAuthorityData: []byte("ca"), AllowPlainHTTP: true,
	}), authInfo(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "http://127.0.0.1:8001" || len(cfg.CAData) > 0 || cfg.BearerToken != "" || len(cfg.CertData) > 0 || cfg.ExecProvider != nil {
		t.Errorf("plain HTTP config = %+v, want only the host", cfg)
	}
	// allowPlainHTTP changes nothing for an https:// server.
	if _, err := RESTConfig(newCluster(&picchuv1alpha1.ClusterConfig{Server: "https://10.0.0.1", AllowPlainHTTP: true}), authInfo(`{}`)); err == nil {
		t.Errorf("an https:// server with allowPlainHTTP accepted empty credentials")
	}
}

// Test_RESTConfig_TakesNothingFromTheEnvironment builds configs in an
// environment that has a kubeconfig and looks like a pod's: they hold only
// what the Cluster and its Secret say.
func Test_RESTConfig_TakesNothingFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://operator.example:6443"}}]
users: [{name: u, user: {token: operator-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("KUBERNETES_MASTER", "https://operator.example:6443")

	server := &picchuv1alpha1.ClusterConfig{Server: "https://10.0.0.1:6443"}
	cfg, err := RESTConfig(newCluster(server), authInfo(`{"token": "cluster-token"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &rest.Config{Host: server.Server, BearerToken: "cluster-token"}
	if cfg.Host != want.Host || cfg.BearerToken != want.BearerToken || cfg.BearerTokenFile != "" ||
		len(cfg.CertData) > 0 || cfg.CertFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil || cfg.Username != "" ||
		cfg.Impersonate.UserName != "" {
		t.Errorf("config = %+v, want only the server and the Secret's token", cfg)
	}
	if _, err := RESTConfig(newCluster(server), authInfo(`{}`)); err == nil {
		t.Errorf("empty auth-info accepted in an environment with a kubeconfig and a service account")
	}
}

func Test_RESTConfig_Errors(t *testing.T) {
	server := &picchuv1alpha1.ClusterConfig{Server: "https://10.0.0.1:6443"}
	tests := []struct {
		name    string
		cluster *picchuv1alpha1.Cluster
		secret  *corev1.Secret
		want    string
	}{
		{"no config", newCluster(nil), secret(map[string][]byte{AuthInfoKey: []byte(`{}`)}), "has no spec.config"},
		{"no auth-info key", newCluster(server), secret(map[string][]byte{"token": []byte("x")}), `has no "auth-info" key`},
		{"auth-info is not JSON", newCluster(server), secret(map[string][]byte{AuthInfoKey: []byte("token: x")}), `decoding "auth-info"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RESTConfig(tt.cluster, tt.secret)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "picchu/a") {
				t.Errorf("error = %v, want one naming cluster picchu/a and saying %q", err, tt.want)
			}
		})
	}
	if _, err := RESTConfig(newCluster(nil), secret(nil)); !errors.Is(err, ErrNoConfig) {
		t.Errorf("error = %v, want ErrNoConfig", err)
	}
}

func Test_PlainHTTP(t *testing.T) {
	for _, tt := range []struct {
		config *picchuv1alpha1.ClusterConfig
		want   bool
	}{
		{nil, false},
		{&picchuv1alpha1.ClusterConfig{Server: "https://a", AllowPlainHTTP: true}, false},
		{&picchuv1alpha1.ClusterConfig{Server: "http://a"}, false},
		{&picchuv1alpha1.ClusterConfig{Server: "http://a", AllowPlainHTTP: true}, true},
	} {
		if got := PlainHTTP(newCluster(tt.config)); got != tt.want {
			t.Errorf("PlainHTTP(%+v) = %v, want %v", tt.config, got, tt.want)
		}
	}
}
