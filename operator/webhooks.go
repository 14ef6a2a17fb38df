package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/integrations/prometheus"
	"github.com/medium/picchu/plan/manifests"
)

// WebhookOptions are the settings Picchu's admission webhooks check
// against, from o: its protected namespaces, and the check of SLI queries
// the baseline comparison cannot count per raw series (Prometheus'
// parser, through prometheus.CheckCountable), which the Revision webhook
// warns about.
func WebhookOptions(o Options) picchuv1alpha1.WebhookOptions {
	label := clusterLabel(o)
	return picchuv1alpha1.WebhookOptions{
		ProtectedNamespaces: appProtected(o), SecretProtectedNamespaces: picchuv1alpha1.SecretProtectedNamespaces(o.ProtectedNamespaces),
		AppNamespacePolicy: o.AppNamespacePolicy, SLIQueryCheck: prometheus.CheckCountable,
		TargetCheck: func(app string, t *picchuv1alpha1.RevisionTarget, path *field.Path) field.ErrorList {
			return manifests.CheckTenancy(app, label, t, path)
		},
	}
}

// SetupWebhooks registers Picchu's admission webhooks with mgr, with the
// settings of o (WebhookOptions), as main.go serves them.
func SetupWebhooks(mgr ctrl.Manager, o Options) error {
	if err := picchuv1alpha1.SetupWebhooksWithManager(mgr, WebhookOptions(o)); err != nil {
		return fmt.Errorf("setting up webhooks: %w", err)
	}
	return nil
}
