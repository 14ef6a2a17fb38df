package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/kit"
)

// registerCluster creates, in the harness namespace, a Cluster of fleet
// with config (nil: disabled) and its Secret holding authInfo, and deletes
// both when the test ends.
func registerCluster(t *testing.T, name, fleet string, config *picchuv1alpha1.ClusterConfig, authInfo string, secretLabels map[string]string) {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace, Labels: secretLabels},
		Data:       map[string][]byte{access.AuthInfoKey: []byte(authInfo)},
	}
	cl := &picchuv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.Namespace, Labels: map[string]string{picchuv1alpha1.LabelFleet: fleet}},
		Spec:       picchuv1alpha1.ClusterSpec{Enabled: config != nil, Config: config},
	}
	for _, obj := range []client.Object{secret, cl} {
		if err := env.Delivery.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{cl, secret} {
			if err := env.Delivery.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		}
	})
}

// registeredUser is the kubeconfig user the harness registered for target.
func registeredUser(t *testing.T, target *harness.Target) clientcmdv1.AuthInfo {
	t.Helper()
	secret := &corev1.Secret{}
	if err := env.Delivery.Client.Get(context.Background(), client.ObjectKeyFromObject(target.Cluster), secret); err != nil {
		t.Fatal(err)
	}
	var user clientcmdv1.AuthInfo
	if err := json.Unmarshal(secret.Data[access.AuthInfoKey], &user); err != nil {
		t.Fatal(err)
	}
	return user
}

// TestClusterReconciler_RefusesCredentialsFromTheOperatorsFiles registers
// a real target with a Secret whose auth-info names a token file on the
// operator's machine holding a valid token, as its service-account token
// would be: the operator does not read it, the Cluster says why (naming the
// Secret and the field) and so does the ReleaseManager of an app of its
// fleet.
func TestClusterReconciler_RefusesCredentialsFromTheOperatorsFiles(t *testing.T) {
	ctx := context.Background()
	target := env.Targets[1]
	user := registeredUser(t, target)
	if user.Token == "" {
		t.Fatalf("%s is not registered with a token", target.Name)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(user.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	registerCluster(t, "stealer", "stealers", target.Cluster.Spec.Config.DeepCopy(), fmt.Sprintf(`{"tokenFile": %q}`, tokenFile), nil)

	cl := readiness(t, "stealer", metav1.ConditionFalse, picchuv1alpha1.ReasonInvalidCredentials)
	ready := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady)
	for _, want := range []string{"secret " + env.Namespace + "/stealer", "auth-info.tokenFile"} {
		if !strings.Contains(ready.Message, want) {
			t.Errorf("Ready message %q does not say %q", ready.Message, want)
		}
	}
	if !meta.IsStatusConditionTrue(cl.Status.Conditions, picchuv1alpha1.ConditionStalled) {
		t.Errorf("refused credentials are not Stalled: %+v", cl.Status.Conditions)
	}
	if _, ok := registry.Get(client.ObjectKeyFromObject(cl)); ok {
		t.Errorf("a client was built from refused credentials")
	}

	rev := appRevision("heist", "v1", "stealers")
	if err := env.Delivery.Client.Create(ctx, rev); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Delivery.Client.Delete(ctx, rev) })
	kit.Eventually(t, 30*time.Second, "the ReleaseManager reports the refused credentials", func() error {
		rm := &picchuv1alpha1.ReleaseManager{}
		if err := env.Delivery.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: "heist-production"}, rm); err != nil {
			return err
		}
		for _, cs := range rm.Status.Clusters {
			if cs.Name == "stealer" && !cs.Synced && strings.Contains(cs.Message, picchuv1alpha1.ReasonInvalidCredentials) &&
				strings.Contains(cs.Message, "auth-info.tokenFile") {
				return nil
			}
		}
		return fmt.Errorf("clusters %+v", rm.Status.Clusters)
	})
}

// TestClusterReconciler_RefusesEmptyCredentials registers the delivery
// cluster itself, whose admin the operator is, with an empty auth-info: the
// operator sends nothing of its own, and the Cluster says the Secret holds
// no credentials.
func TestClusterReconciler_RefusesEmptyCredentials(t *testing.T) {
	registerCluster(t, "anonymous", "anonymous", &picchuv1alpha1.ClusterConfig{
		Server: env.Delivery.Config.Host, CertificateAuthorityData: env.Delivery.Config.CAData,
	}, `{}`, nil)
	cl := readiness(t, "anonymous", metav1.ConditionFalse, picchuv1alpha1.ReasonInvalidCredentials)
	if msg := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady).Message; !strings.Contains(msg, "holds no credentials") {
		t.Errorf("Ready message %q does not say the Secret holds no credentials", msg)
	}
	if _, ok := registry.Get(client.ObjectKeyFromObject(cl)); ok {
		t.Errorf("a client was built from empty credentials")
	}
}

// TestClusterReconciler_ShowsPlainHTTP registers a target reached through a
// local plain-HTTP proxy that authenticates on its own ("kubectl proxy"),
// with allowPlainHTTP: the Cluster is Ready, and its status says plain HTTP.
func TestClusterReconciler_ShowsPlainHTTP(t *testing.T) {
	target := env.Targets[0]
	upstream, err := url.Parse(target.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(target.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = transport
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			http.Error(w, "credentials over plain HTTP", http.StatusBadRequest)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	registerCluster(t, "plain", "plain", &picchuv1alpha1.ClusterConfig{Server: srv.URL, AllowPlainHTTP: true}, `{}`, nil)
	cl := readiness(t, "plain", metav1.ConditionTrue, picchuv1alpha1.ReasonConnected)
	if !cl.Status.PlainHTTP {
		t.Errorf("status.plainHTTP is false for a cluster reached over plain HTTP")
	}
	if msg := meta.FindStatusCondition(cl.Status.Conditions, picchuv1alpha1.ConditionReady).Message; !strings.Contains(msg, "plain HTTP") {
		t.Errorf("Ready message %q does not say plain HTTP", msg)
	}
	for _, target := range env.Targets {
		if cl := readiness(t, target.Name, metav1.ConditionTrue, picchuv1alpha1.ReasonConnected); cl.Status.PlainHTTP {
			t.Errorf("%s: status.plainHTTP is true for an https:// cluster", target.Name)
		}
	}
}
