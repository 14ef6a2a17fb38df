package operator

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/controllers/releasemanager"
	"github.com/medium/picchu/integrations/datadog"
	"github.com/medium/picchu/integrations/prometheus"
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
			ClusterLabel: o.PrometheusClusterLabel, NamespaceEnforced: o.PrometheusNamespaceEnforced,
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

// clusterLabel is the label that names the cluster an alert or series
// comes from: o's, or prometheus.DefaultClusterLabel.
func clusterLabel(o Options) string {
	if o.PrometheusClusterLabel != "" {
		return o.PrometheusClusterLabel
	}
	return prometheus.DefaultClusterLabel
}
