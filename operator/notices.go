package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/integrations/slack"
)

// notifier is o's Slack notifier, or the one its settings ask for, added
// to mgr; nil when off. The token is read from the Secret the settings
// name at every post, through the manager's cache.
func notifier(mgr ctrl.Manager, o Options) (releasemanager.Notifier, error) {
	if o.Notifier != nil || o.SlackTokenSecret == "" {
		return o.Notifier, nil
	}
	key, err := SecretKey("--slack-token-secret", o.SlackTokenSecret)
	if err != nil {
		return nil, err
	}
	n, err := slack.New(slack.Options{
		Token: slack.SecretToken(mgr.GetClient(), key), Channel: o.SlackChannel, APIURL: o.SlackAPIURL,
		Log: ctrl.Log.WithName("slack"),
	})
	if err != nil {
		return nil, fmt.Errorf("--slack-token-secret: %w", err)
	}
	if err := n.RegisterMetrics(metrics.Registry); err != nil {
		return nil, fmt.Errorf("registering the Slack metrics: %w", err)
	}
	if err := mgr.Add(n); err != nil {
		return nil, fmt.Errorf("adding the Slack notifier: %w", err)
	}
	return n, nil
}
