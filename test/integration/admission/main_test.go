package admission_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/operator"
	"github.com/medium/picchu/test/integration/harness"
)

var (
	// bare is a delivery API server with Picchu's CRDs and no webhook: what
	// it rejects, the schema alone rejects.
	bare *harness.Env
	// hooked is a delivery API server whose admission webhooks are served by
	// this test process.
	hooked *harness.Env
	// hookedClient collects the admission warnings of every request.
	hookedClient client.Client
	// hookedConfig is hookedClient's configuration.
	hookedConfig *rest.Config
	warnings     = &warningRecorder{}
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{}, func(s *harness.Suite) error {
		bare = s.Env
		var err error
		hooked, err = harness.Start(s.Ctx, harness.Options{Webhooks: true})
		s.OnStop(func() error {
			if err := hooked.Stop(); err != nil {
				return fmt.Errorf("stopping hooked API server: %w", err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("starting the hooked API server: %w", err)
		}
		// Stopped before the hooked API server, whose certificates it serves.
		ctx, stopWebhooks := context.WithCancel(s.Ctx)
		s.OnStop(func() error { stopWebhooks(); return nil })
		return serveWebhooks(ctx, hooked)
	})
}

// serveWebhooks runs Picchu's webhooks in a manager, set up as main.go sets
// them up (operator.SetupWebhooks), on the address the hooked API server
// calls, and waits until they answer.
func serveWebhooks(ctx context.Context, env *harness.Env) error {
	opts := env.Delivery.Env.WebhookInstallOptions
	mgr, err := ctrl.NewManager(env.Delivery.Config, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: opts.LocalServingHost, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir,
		}),
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := operator.SetupWebhooks(mgr, operator.Options{ProtectedNamespaces: []string{"cert-*"},
		AppNamespacePolicy: picchuv1alpha1.AppNamespacePolicy{policedNamespace: {"{namespace}-*"}}}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped:", err)
		}
	}()
	cfg := rest.CopyConfig(env.Delivery.Config)
	cfg.WarningHandler = warnings
	hookedConfig = cfg
	if hookedClient, err = client.New(cfg, client.Options{Scheme: env.Scheme}); err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	addr := net.JoinHostPort(opts.LocalServingHost, strconv.Itoa(opts.LocalServingPort))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // local test server
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server at %s did not answer: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// warningRecorder keeps the admission warnings the API server returns.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}
