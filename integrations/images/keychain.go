package images

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
)

// dockerConfig is a .dockerconfigjson's content.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

// dockerAuth is one registry's credentials in a docker config.
type dockerAuth struct {
	Username      string `json:"username,omitempty"`
	Password      string `json:"password,omitempty"`
	Auth          string `json:"auth,omitempty"`
	IdentityToken string `json:"identitytoken,omitempty"`
	RegistryToken string `json:"registrytoken,omitempty"`
}

// Keychain is the credentials of image pull secrets, by registry host.
// It holds the first credentials given for a registry, as the kubelet
// tries the secrets in order.
type Keychain map[string]authn.AuthConfig

var _ authn.Keychain = Keychain(nil)

// KeychainFromSecrets reads the credentials of dockerconfigjson (and
// legacy dockercfg) Secrets; other Secrets are skipped.
func KeychainFromSecrets(secrets []corev1.Secret) (Keychain, error) {
	kc := Keychain{}
	for _, s := range secrets {
		var auths map[string]dockerAuth
		switch s.Type {
		case corev1.SecretTypeDockerConfigJson:
			var cfg dockerConfig
			if err := json.Unmarshal(s.Data[corev1.DockerConfigJsonKey], &cfg); err != nil {
				return nil, fmt.Errorf("reading the docker config of secret %s/%s: %w", s.Namespace, s.Name, err)
			}
			auths = cfg.Auths
		case corev1.SecretTypeDockercfg:
			if err := json.Unmarshal(s.Data[corev1.DockerConfigKey], &auths); err != nil {
				return nil, fmt.Errorf("reading the docker config of secret %s/%s: %w", s.Namespace, s.Name, err)
			}
		default:
			continue
		}
		for key, a := range auths {
			cfg, err := a.config()
			if err != nil {
				return nil, fmt.Errorf("reading the credentials for %q in secret %s/%s: %w", key, s.Namespace, s.Name, err)
			}
			host := registryHost(key)
			if _, seen := kc[host]; !seen {
				kc[host] = cfg
			}
		}
	}
	return kc, nil
}

// config is the credentials, with a base64 user:password auth split.
func (a dockerAuth) config() (authn.AuthConfig, error) {
	cfg := authn.AuthConfig{
		Username: a.Username, Password: a.Password,
		IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken,
	}
	if a.Auth != "" && cfg.Username == "" && cfg.Password == "" {
		raw, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return cfg, fmt.Errorf("decoding auth: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok {
			return cfg, fmt.Errorf("auth is not user:password")
		}
		cfg.Username, cfg.Password = user, pass
	}
	return cfg, nil
}

// registryHost is the registry host a docker config key names: keys may
// carry a scheme and a path ("https://index.docker.io/v1/"), and Docker
// Hub goes by several names.
func registryHost(key string) string {
	host := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	switch host {
	case "docker.io", "registry-1.docker.io":
		return name.DefaultRegistry
	}
	return host
}

// Resolve is the credentials for the resource's registry, anonymous when
// no secret has any.
func (k Keychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	if cfg, ok := k[registryHost(r.RegistryStr())]; ok {
		return authn.FromConfig(cfg), nil
	}
	return authn.Anonymous, nil
}
