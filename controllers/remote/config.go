package remote

import (
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// AuthInfoKey is the key of a Cluster's Secret that holds a kubeconfig user
// (AuthInfo) as JSON, such as {"token": "..."} or
// {"client-certificate-data": "...", "client-key-data": "..."}.
const AuthInfoKey = "auth-info"

// ErrNoConfig is returned for a Cluster without spec.config.
var ErrNoConfig = errors.New("cluster has no spec.config")

// RESTConfig builds the REST config of a target cluster from its Cluster and
// the Secret of the same name: the server and CA from the Cluster, the user
// from the Secret's auth-info key. Every kind of kubeconfig user works (token,
// token file, client certificate, basic auth, exec plugin), because the
// config is built by client-go's own kubeconfig loader.
func RESTConfig(cluster *picchuv1alpha1.Cluster, secret *corev1.Secret) (*rest.Config, error) {
	if cluster.Spec.Config == nil {
		return nil, fmt.Errorf("cluster %s/%s: %w", cluster.Namespace, cluster.Name, ErrNoConfig)
	}
	raw, ok := secret.Data[AuthInfoKey]
	if !ok {
		return nil, fmt.Errorf("cluster %s/%s: secret %s/%s has no %q key",
			cluster.Namespace, cluster.Name, secret.Namespace, secret.Name, AuthInfoKey)
	}
	var user clientcmdv1.AuthInfo
	if err := json.Unmarshal(raw, &user); err != nil {
		return nil, fmt.Errorf("cluster %s/%s: decoding %q of secret %s/%s: %w",
			cluster.Namespace, cluster.Name, AuthInfoKey, secret.Namespace, secret.Name, err)
	}
	const name = "picchu"
	kubeconfig := clientcmdv1.Config{
		Kind:       "Config",
		APIVersion: "v1",
		Clusters: []clientcmdv1.NamedCluster{{Name: name, Cluster: clientcmdv1.Cluster{
			Server:                   cluster.Spec.Config.Server,
			CertificateAuthorityData: cluster.Spec.Config.CertificateAuthorityData,
		}}},
		AuthInfos:      []clientcmdv1.NamedAuthInfo{{Name: name, AuthInfo: user}},
		Contexts:       []clientcmdv1.NamedContext{{Name: name, Context: clientcmdv1.Context{Cluster: name, AuthInfo: name}}},
		CurrentContext: name,
	}
	data, err := json.Marshal(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: encoding kubeconfig: %w", cluster.Namespace, cluster.Name, err)
	}
	loaded, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: loading kubeconfig: %w", cluster.Namespace, cluster.Name, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*loaded, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %s/%s: building client config: %w", cluster.Namespace, cluster.Name, err)
	}
	return cfg, nil
}

// AuthInfoJSON encodes a kubeconfig user as the auth-info value of a Cluster's Secret.
func AuthInfoJSON(user *clientcmdapi.AuthInfo) ([]byte, error) {
	var out clientcmdv1.AuthInfo
	if err := clientcmdv1.Convert_api_AuthInfo_To_v1_AuthInfo(user, &out, nil); err != nil {
		return nil, fmt.Errorf("converting auth info: %w", err)
	}
	return json.Marshal(out)
}
