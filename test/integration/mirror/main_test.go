// Package mirror_test runs the Mirror controller end to end: the operator
// in the test process against a delivery API server and a target API
// server (the harness's), and a second delivery API server with Picchu's
// CRDs, registered on the first as the Cluster "mirror", as a user
// registers a mirror. A test registers a second Cluster, "down", at a
// closed port: a mirror that cannot be reached. The delivery cluster serves
// ExternalSecrets (a minimal CRD); the mirror does not, until a test
// installs it there.
package mirror_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/releasemetrics"
	"github.com/medium/picchu/test/integration/harness"
	"github.com/medium/picchu/test/integration/inprocess"
	"github.com/medium/picchu/test/kit"
)

// The Clusters the Mirrors name, in env's namespace, in a fleet no
// Revision targets.
const (
	mirrorCluster = "mirror"
	downCluster   = "down"
	mirrorFleet   = "mirrors"
)

var (
	env *harness.Env
	// second is the mirror's delivery API server, and secondClient its
	// administrator's client.
	second       *envtest.Environment
	secondConfig *rest.Config
	secondClient client.Client
	// requests counts the operator's requests to the mirror.
	requests = &requestLog{}
	// running is the operator; a test may restart it with other options.
	running *inprocess.Runner
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Targets: 1}, setup)
}

func setup(s *harness.Suite) error {
	ctx := s.Ctx
	env = s.Env
	s.ServeReplicaSets()
	// Before the operator starts: it asks once whether the delivery
	// cluster serves ExternalSecrets.
	if _, err := envtest.InstallCRDs(env.Delivery.Config, envtest.CRDInstallOptions{
		CRDs: []*apiextensionsv1.CustomResourceDefinition{externalSecretCRD()},
	}); err != nil {
		return fmt.Errorf("installing the ExternalSecret CRD at home: %w", err)
	}
	if err := startSecond(ctx); err != nil {
		return err
	}
	s.OnStop(second.Stop)
	if err := registerMirror(ctx); err != nil {
		return err
	}
	if err := releasemetrics.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering release metrics: %w", err)
	}
	host, err := url.Parse(secondConfig.Host)
	if err != nil {
		return fmt.Errorf("parsing the mirror's address: %w", err)
	}
	requests.host = host.Host
	if err := env.Delivery.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", elsewhere, err)
	}
	// The operator reads env's namespace and elsewhere; stopped, it drops
	// its clients of the mirrors too.
	running, err = inprocess.Run(s, operator.Options{
		Namespaces: []string{elsewhere},
		SyncPeriod: 10 * time.Minute, ClusterTimeout: 5 * time.Second, ConcurrentReleaseManagers: 4,
		WrapTransport: requests.wrap,
	}, inprocess.AfterStop(func(op *inprocess.Operator) {
		for _, name := range []string{mirrorCluster, downCluster} {
			op.Registry.Remove(types.NamespacedName{Namespace: env.Namespace, Name: name})
		}
	}))
	return err
}

// elsewhere is a namespace the operator reads besides env's, whose
// ConfigMaps and Secrets a Mirror of env's namespace may copy only when
// the operator allows it.
const elsewhere = "mirror-elsewhere"

// startSecond starts the mirror's delivery API server with Picchu's CRDs.
func startSecond(ctx context.Context) error {
	assets, err := kit.Assets(ctx)
	if err != nil {
		return err
	}
	second = &envtest.Environment{
		ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout,
		Scheme:                   env.Scheme,
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(kit.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
	}
	if secondConfig, err = second.Start(); err != nil {
		return fmt.Errorf("starting the mirror's API server: %w", err)
	}
	if secondClient, err = client.New(secondConfig, client.Options{Scheme: env.Scheme}); err != nil {
		return fmt.Errorf("building the mirror's client: %w", err)
	}
	return nil
}

// registerMirror registers the mirror's API server as the Cluster
// "mirror", with an administrator's client certificate.
func registerMirror(ctx context.Context) error {
	user, err := second.AddUser(envtest.User{Name: "picchu-mirror", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding the mirror's user: %w", err)
	}
	cfg := user.Config()
	_, err = kit.RegisterTarget(ctx, env.Delivery.Client, kit.Registration{
		Namespace: env.Namespace, Name: mirrorCluster, Fleet: mirrorFleet,
		Server: secondConfig.Host, CAData: secondConfig.CAData,
		User: &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData},
	})
	return err
}

// registerDown registers the Cluster "down", with a token, at a port
// nothing listens on.
func registerDown(ctx context.Context) (*picchuv1alpha1.Cluster, error) {
	port, err := kit.FreePort()
	if err != nil {
		return nil, err
	}
	return kit.RegisterTarget(ctx, env.Delivery.Client, kit.Registration{
		Namespace: env.Namespace, Name: downCluster, Fleet: mirrorFleet,
		Server: fmt.Sprintf("https://127.0.0.1:%d", port), CAData: secondConfig.CAData,
		User: &clientcmdapi.AuthInfo{Token: "unused"},
	})
}

// externalSecretCRD is a minimal external-secrets.io/v1 ExternalSecret.
func externalSecretCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "externalsecrets.external-secrets.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "external-secrets.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "externalsecrets", Singular: "externalsecret", Kind: "ExternalSecret", ListKind: "ExternalSecretList",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// requestLog records the operator's requests to the mirror's API server
// that read or write objects (not its health checks, discovery, or the
// ReplicaSet informer every registered cluster gets).
type requestLog struct {
	host string
	mu   sync.Mutex
	log  []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Host == l.host && objectRequest(req.URL.Path) {
			l.mu.Lock()
			l.log = append(l.log, req.Method+" "+req.URL.Path)
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// objectRequest says whether path names objects: /api/v1/<resource>...,
// /apis/<group>/<version>/<resource>..., not a discovery document, the
// version, or ReplicaSets.
func objectRequest(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case strings.Contains(path, "/replicasets"):
		return false
	case len(parts) >= 3 && parts[0] == "api":
		return true
	case len(parts) >= 4 && parts[0] == "apis":
		return true
	}
	return false
}

// since returns the requests logged after the first n, and how many there are.
func (l *requestLog) since(n int) ([]string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log[min(n, len(l.log)):]...), len(l.log)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// reconciles is how many runs the controller named name has finished.
func reconciles(t *testing.T, name string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == name {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// mirrorFailures is picchu_mirror_failure_counter{app, mirror}.
func mirrorFailures(t *testing.T, app, mirror string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "picchu_mirror_failure_counter" {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["app"] == app && got["mirror"] == mirror {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// releaseManager reads the ReleaseManager of app in target production.
func releaseManager(ctx context.Context, app string) (*picchuv1alpha1.ReleaseManager, error) {
	return env.Apps().ReleaseManager(ctx, app)
}
