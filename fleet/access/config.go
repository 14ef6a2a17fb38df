package access

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// AuthInfoKey is the key of a Cluster's Secret that holds a kubeconfig user
// (AuthInfo) as JSON, such as {"token": "..."} or
// {"client-certificate-data": "...", "client-key-data": "..."}.
const AuthInfoKey = "auth-info"

// LabelCredentials marks a Secret that holds credentials: a Revision's
// configSelector never copies it to target clusters, whatever its other
// labels. A Cluster's Secret is recognised without it (by its name), but
// may carry it, so that it is never copied even before its Cluster exists.
const LabelCredentials = "picchu.medium.engineering/credentials"

// Credentials says why a Secret of the delivery cluster holds credentials
// that Picchu never copies anywhere (by configSelector, ClusterSecrets or
// Mirror), or "" when it holds none: the Secret of a Cluster of its
// namespace (clusters holds their names), one labelled LabelCredentials, or
// a service account token.
func Credentials(s *corev1.Secret, clusters map[string]bool) string {
	switch {
	case clusters[s.Name]:
		return "the credentials of the Cluster of that name"
	case s.Labels[LabelCredentials] != "":
		return "labelled " + LabelCredentials
	case s.Type == corev1.SecretTypeServiceAccountToken:
		return "a service account token of the delivery cluster"
	case s.Type == corev1.SecretTypeBootstrapToken:
		return "a bootstrap token, which joins nodes to the delivery cluster"
	}
	return ""
}

// ErrNoConfig is returned for a Cluster without spec.config.
var ErrNoConfig = errors.New("cluster has no spec.config")

// Policy says which credentials the operator accepts from a Cluster's
// Secret. Whoever may write a Cluster and its Secret decides where the
// operator connects and what it sends: only credentials held in the Secret
// itself are accepted, never a reference to something of the operator's
// (a file, its cloud identity, its own kubeconfig or service account).
type Policy struct {
	// AllowExec accepts exec plugins: commands the operator runs, with its
	// own files and environment, to get credentials. Whoever writes a
	// Cluster's Secret then runs commands as the operator.
	AllowExec bool
}

// RESTConfig builds the REST config of a target cluster with the default
// Policy (no exec plugins).
func RESTConfig(cluster *picchuv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
	return Policy{}.RESTConfig(cluster, secret)
}

// RESTConfig builds the REST config of a target cluster from its Cluster and
// the Secret of the same name: the server and CA from the Cluster, the user
// from the Secret's auth-info key. It accepts a bearer token ("token"), a
// client certificate and key ("client-certificate-data" and
// "client-key-data"), or, when the policy allows, an exec plugin ("exec");
// it rejects every field that reads the operator's files or uses its
// identity, and an http:// server unless spec.config.allowPlainHTTP is set,
// in which case no credentials are sent. The config is built directly, not
// through a kubeconfig loader: nothing of the operator's environment
// (KUBECONFIG, in-cluster service account) can end up in it.
func (p Policy) RESTConfig(cluster *picchuv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
	if cluster.Spec.Config == nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", cluster.Namespace, cluster.Name, ErrNoConfig)
	}
	plain, err := plainHTTP(cluster.Spec.Config)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", cluster.Namespace, cluster.Name, err)
	}
	raw, ok := secret.Data[AuthInfoKey]
	if !ok {
		return nil, fmt.Errorf("cluster %s/%s: secret %s/%s has no %q key",
			cluster.Namespace, cluster.Name, secret.Namespace, secret.Name, AuthInfoKey)
	}
	user, err := decodeAuthInfo(raw)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: decoding %q of secret %s/%s: %w",
			cluster.Namespace, cluster.Name, AuthInfoKey, secret.Namespace, secret.Name, err)
	}
	if err := p.check(user, plain); err != nil {
		return nil, fmt.Errorf("cluster %s/%s: secret %s/%s: %w",
			cluster.Namespace, cluster.Name, secret.Namespace, secret.Name, err)
	}
	cfg := &rest.Config{Host: cluster.Spec.Config.Server}
	if plain {
		return cfg, nil
	}
	cfg.CAData = cluster.Spec.Config.CertificateAuthorityData
	cfg.BearerToken = user.Token
	cfg.CertData, cfg.KeyData = user.ClientCertificateData, user.ClientKeyData
	if user.Exec != nil {
		exec := &clientcmdapi.ExecConfig{}
		if err := clientcmdv1.Convert_v1_ExecConfig_To_api_ExecConfig(user.Exec, exec, nil); err != nil {
			return nil, fmt.Errorf("cluster %s/%s: secret %s/%s: converting %s.exec: %w",
				cluster.Namespace, cluster.Name, secret.Namespace, secret.Name, AuthInfoKey, err)
		}
		// The operator has no terminal to ask anyone anything.
		exec.InteractiveMode = clientcmdapi.NeverExecInteractiveMode
		cfg.ExecProvider = exec
	}
	return cfg, nil
}

// PlainHTTP says whether Picchu reaches the Cluster's API server over plain
// HTTP: its server is http:// and spec.config.allowPlainHTTP is set.
func PlainHTTP(cluster *picchuv1alpha1.Cluster) bool {
	if cluster.Spec.Config == nil {
		return false
	}
	plain, err := plainHTTP(cluster.Spec.Config)
	return err == nil && plain
}

// plainHTTP checks the server URL: https, or http when allowed; no user
// name or password in it (net/http would send them).
func plainHTTP(config *picchuv1alpha1.ClusterConfig) (bool, error) {
	u, err := url.Parse(config.Server)
	if err != nil {
		return false, fmt.Errorf("spec.config.server: %w", err)
	}
	if u.Host == "" {
		return false, fmt.Errorf("spec.config.server %q has no host", config.Server)
	}
	if u.User != nil {
		return false, fmt.Errorf("spec.config.server must not hold a user name or password; credentials go in the Secret's %s", AuthInfoKey)
	}
	switch {
	case u.Scheme == "https":
		return false, nil
	case u.Scheme == "http" && config.AllowPlainHTTP:
		return true, nil
	case u.Scheme == "http":
		return false, fmt.Errorf("spec.config.server %q is plain HTTP: use https://, or set spec.config.allowPlainHTTP to reach it without TLS and without credentials", config.Server)
	}
	return false, fmt.Errorf("spec.config.server %q: scheme must be https", config.Server)
}

// decodeAuthInfo decodes auth-info strictly: a misspelt or misplaced key
// (such as a whole kubeconfig "users" entry) is an error, not an empty user.
func decodeAuthInfo(raw []byte) (*clientcmdv1.AuthInfo, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	user := &clientcmdv1.AuthInfo{}
	if err := dec.Decode(user); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return user, nil
}

// check accepts one kind of inline credentials, and none over plain HTTP.
func (p Policy) check(user *clientcmdv1.AuthInfo, plain bool) error {
	field := func(name string) string { return AuthInfoKey + "." + name }
	// Fields that read the operator's files or use its identity, or that
	// Picchu does not support.
	switch {
	case user.TokenFile != "":
		return fmt.Errorf("%s is not accepted: it names a file on the operator's machine; put the token itself in %s", field("tokenFile"), field("token"))
	case user.ClientCertificate != "":
		return fmt.Errorf("%s is not accepted: it names a file on the operator's machine; put the PEM certificate in %s", field("client-certificate"), field("client-certificate-data"))
	case user.ClientKey != "":
		return fmt.Errorf("%s is not accepted: it names a file on the operator's machine; put the PEM key in %s", field("client-key"), field("client-key-data"))
	case user.AuthProvider != nil:
		return fmt.Errorf("%s is not accepted: auth providers use the operator's own files and cloud identity; use %s or a client certificate", field("auth-provider"), field("token"))
	case user.Username != "" || user.Password != "":
		return fmt.Errorf("%s and %s are not accepted: Kubernetes has not supported basic authentication since 1.19; use %s or a client certificate", field("username"), field("password"), field("token"))
	case user.Impersonate != "" || user.ImpersonateUID != "" || len(user.ImpersonateGroups) > 0 || len(user.ImpersonateUserExtra) > 0:
		return fmt.Errorf("%s, %s, %s and %s are not accepted: Picchu acts as the user its credentials authenticate, not as another", field("as"), field("as-uid"), field("as-groups"), field("as-user-extra"))
	case user.Exec != nil && !p.AllowExec:
		return fmt.Errorf("%s is not accepted: it runs a command on the operator's machine, which only an operator started with --allow-exec-credentials does", field("exec"))
	}
	cert, key := len(user.ClientCertificateData) > 0, len(user.ClientKeyData) > 0
	if cert != key {
		return fmt.Errorf("%s and %s go together: set both or neither", field("client-certificate-data"), field("client-key-data"))
	}
	kinds := 0
	for _, set := range []bool{user.Token != "", cert, user.Exec != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case plain && kinds > 0:
		return fmt.Errorf("%s must hold no credentials: spec.config.allowPlainHTTP sends none over plain HTTP, where anyone on the path could read them; use an https:// server", AuthInfoKey)
	case plain:
		return nil
	case kinds == 0:
		return fmt.Errorf("%s holds no credentials: set %s, or %s and %s", AuthInfoKey, field("token"), field("client-certificate-data"), field("client-key-data"))
	case kinds > 1:
		return fmt.Errorf("%s holds more than one kind of credentials: set only one of %s, %s with %s, or %s", AuthInfoKey, field("token"), field("client-certificate-data"), field("client-key-data"), field("exec"))
	}
	return nil
}

// AuthInfoJSON encodes a kubeconfig user as the auth-info value of a Cluster's Secret.
func AuthInfoJSON(user *clientcmdapi.AuthInfo) ([]byte, error) {
	var out clientcmdv1.AuthInfo
	if err := clientcmdv1.Convert_api_AuthInfo_To_v1_AuthInfo(user, &out, nil); err != nil {
		return nil, fmt.Errorf("converting auth info: %w", err)
	}
	return json.Marshal(out)
}
