package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/kit"
)

// Scheme knows every type a test reads or writes: the operator's own scheme.
func Scheme() (*runtime.Scheme, error) { return operator.NewScheme() }

// AuthMode is how a target's registered credentials authenticate.
type AuthMode string

const (
	// AuthClientCertificate registers a client certificate and key.
	AuthClientCertificate AuthMode = "client-certificate"
	// AuthToken registers a bearer token.
	AuthToken AuthMode = "token"
)

// attachOutput shows the output of the API servers, etcd and the targets'
// controllers when PICCHU_TEST_CONTROL_PLANE_OUTPUT is set, to debug a
// server that fails to start.
var attachOutput = os.Getenv("PICCHU_TEST_CONTROL_PLANE_OUTPUT") != ""

// Options says what to start.
type Options struct {
	// Targets is the number of target clusters.
	Targets int
	// Fleet is the fleet label of every target ("production" when empty).
	Fleet string
	// Namespace of the Clusters and Secrets on the delivery cluster ("picchu" when empty).
	Namespace string
	// Webhooks serves Picchu's admission webhooks for the delivery cluster
	// from this process (see Env.Delivery.Env.WebhookInstallOptions).
	Webhooks bool
	// Controllers runs, against each target's API server, the
	// kube-controller-manager (ReplicaSet, HorizontalPodAutoscaler and
	// garbage collector controllers; HPAs sync every second), the
	// kube-scheduler, and kwok managing KwokNodeCount fake nodes, on which
	// pods become Running and Ready at once. Start returns once they have
	// run a probe ReplicaSet; Stop stops them. Do not use ServeReplicaSets
	// on such targets.
	Controllers bool
}

// Server is one running API server.
type Server struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	// Controllers says the server runs real controllers, a scheduler and
	// kwok nodes (see Options.Controllers).
	Controllers bool
	controllers []*kit.Process
}

// Target is a running target cluster and its registration on the delivery cluster.
type Target struct {
	Server
	// Name of the Cluster (and its Secret) on the delivery cluster.
	Name string
	// Auth is the kind of credentials registered.
	Auth AuthMode
	// Cluster is the registered Cluster as stored.
	Cluster *picchuv1alpha1.Cluster
	// Proxy is the address the Cluster is registered with: stopping it
	// makes the target unreachable for the operator (not for the test's
	// own Client), starting it brings the target back.
	Proxy *Proxy
	token string
}

// Env is a delivery cluster and its targets.
type Env struct {
	Scheme    *runtime.Scheme
	Namespace string
	Fleet     string
	Delivery  *Server
	Targets   []*Target
	tmpDir    string
}

// Apps are the test's apps of the Env: Revisions in its namespace for its
// fleet, read with the delivery cluster's client.
func (e *Env) Apps() kit.Apps {
	return kit.Apps{Client: e.Delivery.Client, Namespace: e.Namespace, Fleet: e.Fleet}
}

// Start starts the delivery cluster and the targets concurrently and
// registers the targets. Call Stop when done, also after an error.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.Fleet == "" {
		opts.Fleet = "production"
	}
	if opts.Namespace == "" {
		opts.Namespace = "picchu"
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	assets, err := kit.Assets(ctx)
	if err != nil {
		return nil, err
	}
	tmpDir, err := os.MkdirTemp("", "picchu-harness-")
	if err != nil {
		return nil, fmt.Errorf("creating temp dir: %w", err)
	}
	env := &Env{Scheme: scheme, Namespace: opts.Namespace, Fleet: opts.Fleet, tmpDir: tmpDir}

	root := kit.RepoRoot()
	env.Delivery = &Server{Env: &envtest.Environment{
		ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout,
		Scheme:                   scheme,
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		AttachControlPlaneOutput: attachOutput,
	}}
	if opts.Webhooks {
		env.Delivery.Env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook")},
		}
	}
	var targetCRDs []string
	if opts.Targets > 0 {
		if targetCRDs, err = kit.ThirdPartyCRDPaths(ctx); err != nil {
			return env, err
		}
	}
	for i := range opts.Targets {
		t := &Target{Name: fmt.Sprintf("target-%d", i), Auth: AuthClientCertificate}
		if i%2 == 1 {
			t.Auth = AuthToken
		}
		t.Env = &envtest.Environment{
			ControlPlaneStartTimeout: kit.ControlPlaneStartTimeout,
			Scheme:                   scheme,
			BinaryAssetsDirectory:    assets,
			CRDInstallOptions:        envtest.CRDInstallOptions{Paths: targetCRDs, ErrorIfPathMissing: true},
			AttachControlPlaneOutput: attachOutput,
		}
		if t.Auth == AuthToken {
			if err := t.useTokenFile(tmpDir); err != nil {
				return env, err
			}
		}
		env.Targets = append(env.Targets, t)
	}

	var g errgroup.Group
	g.Go(env.Delivery.start)
	for _, t := range env.Targets {
		g.Go(func() error {
			if err := t.start(); err != nil || !opts.Controllers {
				return err
			}
			if err := t.startControllers(ctx, filepath.Join(tmpDir, t.Name)); err != nil {
				return fmt.Errorf("target %s: %w", t.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return env, err
	}
	if err := env.register(ctx); err != nil {
		return env, err
	}
	return env, nil
}

func (s *Server) start() error {
	cfg, err := s.Env.Start()
	if err != nil {
		// Start can fail after etcd or the API server are up (say, on a CRD
		// the server rejects): stop what runs so no process outlives the test.
		if stopErr := s.Env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping after the failed start: %w", stopErr))
		}
		return fmt.Errorf("starting API server: %w", err)
	}
	s.Config = cfg
	s.Client, err = client.New(cfg, client.Options{Scheme: s.Env.Scheme})
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	return nil
}

// register creates the namespace on the delivery cluster, and registers
// every target there, through a proxy of its own, as a user registers it.
func (e *Env) register(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Namespace}}
	if err := e.Delivery.Client.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", e.Namespace, err)
	}
	for _, t := range e.Targets {
		user, err := t.credentials()
		if err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
		server, err := url.Parse(t.Config.Host)
		if err != nil {
			return fmt.Errorf("target %s: parsing server address %q: %w", t.Name, t.Config.Host, err)
		}
		if t.Proxy, err = newProxy(server.Host); err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
		server.Host = t.Proxy.Addr
		if t.Cluster, err = kit.RegisterTarget(ctx, e.Delivery.Client, kit.Registration{
			Namespace: e.Namespace, Name: t.Name, Fleet: e.Fleet,
			Server: server.String(), CAData: t.Config.CAData, User: user,
		}); err != nil {
			return err
		}
	}
	return nil
}

// credentials creates an all-powerful user on the target and returns it as a
// kubeconfig user: a client certificate, or a bearer token accepted through
// a webhook-free static token file.
func (t *Target) credentials() (*clientcmdapi.AuthInfo, error) {
	switch t.Auth {
	case AuthToken:
		return &clientcmdapi.AuthInfo{Token: t.token}, nil
	default:
		user, err := t.Env.AddUser(envtest.User{Name: "picchu-" + t.Name, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, fmt.Errorf("adding user: %w", err)
		}
		cfg := user.Config()
		return &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}, nil
	}
}

// Stop stops every target's controllers and every API server that started,
// and removes temporary files.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	var errs []error
	servers := []*Server{e.Delivery}
	for _, t := range e.Targets {
		servers = append(servers, &t.Server)
	}
	for _, t := range e.Targets {
		if err := t.stopControllers(); err != nil {
			errs = append(errs, fmt.Errorf("target %s: %w", t.Name, err))
		}
		if t.Proxy != nil {
			if err := t.Proxy.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("target %s: stopping proxy: %w", t.Name, err))
			}
		}
	}
	for _, s := range servers {
		if s == nil || s.Env == nil || s.Config == nil {
			continue
		}
		if err := s.Env.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	if e.tmpDir != "" {
		errs = append(errs, os.RemoveAll(e.tmpDir))
	}
	return errors.Join(errs...)
}

// useTokenFile makes the target's API server accept a random bearer token
// for a member of system:masters (a static token file).
func (t *Target) useTokenFile(dir string) error {
	token, err := randomToken()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, t.Name+"-tokens.csv")
	line := fmt.Sprintf("%s,picchu-%s,picchu-%s,\"system:masters\"\n", token, t.Name, t.Name)
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		return fmt.Errorf("target %s: writing token file: %w", t.Name, err)
	}
	t.Env.ControlPlane.GetAPIServer().Configure().Set("token-auth-file", path)
	t.token = token
	return nil
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
