package main

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/medium/picchu/test/e2e/fleet"
	"github.com/medium/picchu/test/kit"
)

// webhooks serve the operator's admission webhooks to the delivery API
// server, as production serves them: the webhook configurations
// main.go's markers generate (config/webhook), pointed at the operator's
// port on the loopback, with a certificate envtest makes. A Revision then
// gets its labels at admission, as in production, and the Revision
// controller writes none; a fleet without webhooks counts that write.
type webhooks struct {
	o *envtest.WebhookInstallOptions
}

// prepareWebhooks makes the certificate and picks the port: the operator's
// flags to serve them.
func prepareWebhooks() (*webhooks, []string, error) {
	o := &envtest.WebhookInstallOptions{Paths: []string{filepath.Join(kit.RepoRoot(), "config", "webhook")}}
	if err := o.PrepWithoutInstalling(); err != nil {
		return nil, nil, fmt.Errorf("preparing the admission webhooks: %w", err)
	}
	return &webhooks{o}, []string{
		"--enable-webhooks=true",
		fmt.Sprintf("--webhook-port=%d", o.LocalServingPort),
		"--webhook-cert-dir=" + o.LocalServingCertDir,
	}, nil
}

// install registers the webhooks with the delivery API server, once the
// operator serves them, and waits until they answer.
func (w *webhooks) install(f *fleet.Fleet) error {
	if err := w.o.Install(f.Delivery.Config); err != nil {
		return fmt.Errorf("registering the admission webhooks with the delivery cluster: %w", err)
	}
	return nil
}

// cleanup removes the certificate.
func (w *webhooks) cleanup() {
	if err := w.o.Cleanup(); err != nil {
		logf("removing the webhooks' certificate: %v", err)
	}
}
