package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/datadog"
	"github.com/medium/picchu/prometheus"
)

// alertSources builds the Prometheus and Datadog alert sources the flags
// ask for; either is nil when off. The Datadog keys are read from the
// Secret the flags name at every query, through reader (the manager's cache).
func alertSources(reader client.Reader, o controllers.Options) (controllers.AlertSource, controllers.AlertSource, error) {
	log := ctrl.Log.WithName("setup")
	var prom, dd controllers.AlertSource
	if o.PrometheusEnabled && o.PrometheusQueryAddress != "" {
		p, err := prometheus.New(prometheus.Config{
			Address: o.PrometheusQueryAddress, Timeout: o.PrometheusQueryTimeout, TTL: o.PrometheusQueryTTL,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--prometheus-query-address: %w", err)
		}
		prom = p
	} else {
		log.Info("Prometheus alert checks are off (--prometheus-enabled=false or no --prometheus-query-address)")
	}
	if o.DatadogSecret != "" {
		key, err := datadogSecretKey(o.DatadogSecret)
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

// datadogSecretKey parses --datadog-secret, "namespace/name".
func datadogSecretKey(flag string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(flag, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--datadog-secret %q: want namespace/name", flag)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
