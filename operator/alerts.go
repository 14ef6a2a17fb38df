package operator

import (
	"errors"
	"fmt"
	"strings"

	clientprometheus "github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/datadog"
	"github.com/medium/picchu/prometheus"
	"github.com/medium/picchu/slack"
)

// alertSources are o's Prometheus and Datadog alert sources, or the ones
// its settings ask for; either is nil when off. The Datadog keys are read
// from the Secret the settings name at every query, through reader (the
// manager's cache).
func alertSources(reader client.Reader, o Options) (releasemanager.AlertSource, releasemanager.AlertSource, error) {
	log := ctrl.Log.WithName("setup")
	prom, dd := o.Prometheus, o.Datadog
	switch {
	case prom != nil: // the caller's
	case o.PrometheusQueryAddress != "":
		p, err := prometheus.New(prometheus.Config{
			Address: o.PrometheusQueryAddress, Timeout: o.PrometheusQueryTimeout, TTL: o.PrometheusQueryTTL,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--prometheus-query-address: %w", err)
		}
		prom = p
	default:
		log.Info("Prometheus alert checks are off (--prometheus-enabled=false or no --prometheus-query-address)")
	}
	if dd == nil && o.DatadogSecret != "" {
		key, err := SecretKey("--datadog-secret", o.DatadogSecret)
		if err != nil {
			return nil, nil, err
		}
		// Read at every query, from the cache: a Secret created after the
		// operator started, or rotated, works without a restart, and a
		// missing one holds the builds Datadog judges (their
		// AlertsObserved condition says why) instead of stopping the operator.
		keys := datadog.SecretKeys(reader, key)
		d, err := datadog.New(datadog.Config{Keys: keys, Site: o.DatadogSite, TTL: o.DatadogQueryTTL})
		if err != nil {
			return nil, nil, fmt.Errorf("--datadog-site: %w", err)
		}
		dd = d
	}
	return prom, dd, nil
}

// SecretKey parses the value of a flag naming a Secret, "namespace/name".
func SecretKey(flag, value string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(value, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("%s %q: want namespace/name", flag, value)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

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
	for _, c := range n.Collectors() {
		if err := metrics.Registry.Register(c); err != nil && !errors.As(err, new(clientprometheus.AlreadyRegisteredError)) {
			return nil, fmt.Errorf("registering the Slack metrics: %w", err)
		}
	}
	if err := mgr.Add(n); err != nil {
		return nil, fmt.Errorf("adding the Slack notifier: %w", err)
	}
	return n, nil
}
