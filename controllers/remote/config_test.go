package remote

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	cfg, err = RESTConfig(newCluster(server), secret(map[string][]byte{AuthInfoKey: []byte(`{"username": "u", "password": "p"}`)}))
	if err != nil || cfg.Username != "u" || cfg.Password != "p" {
		t.Errorf("basic auth: %v %q %q", err, cfg.Username, cfg.Password)
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
