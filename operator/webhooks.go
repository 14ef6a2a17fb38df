package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/integrations/prometheus"
)

// WebhookOptions are the settings Picchu's admission webhooks check
// against, from o: its protected namespaces, and the check of SLI queries
// the baseline comparison cannot count per raw series (Prometheus'
// parser, through prometheus.CheckCountable), which the Revision webhook
// warns about.
func WebhookOptions(o Options) picchuv1alpha1.WebhookOptions {
	return picchuv1alpha1.WebhookOptions{ProtectedNamespaces: o.ProtectedNamespaces, SLIQueryCheck: prometheus.CheckCountable}
}

// SetupWebhooks registers Picchu's admission webhooks with mgr, with the
// settings of o (WebhookOptions), as main.go serves them.
func SetupWebhooks(mgr ctrl.Manager, o Options) error {
	if err := picchuv1alpha1.SetupWebhooksWithManager(mgr, WebhookOptions(o)); err != nil {
		return fmt.Errorf("setting up webhooks: %w", err)
	}
	return nil
}
