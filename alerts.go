package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/medium/picchu/controllers"
	"github.com/medium/picchu/datadog"
	"github.com/medium/picchu/prometheus"
)

// alertSources builds the Prometheus and Datadog alert sources the flags
// ask for; either is nil when off. The Datadog keys are read once, from the
// Secret the flags name, through reader (the API server: the manager's
// cache has not started yet).
func alertSources(ctx context.Context, reader client.Reader, o controllers.Options) (controllers.AlertSource, controllers.AlertSource, error) {
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
		ns, name, ok := strings.Cut(o.DatadogSecret, "/")
		if !ok || ns == "" || name == "" {
			return nil, nil, fmt.Errorf("--datadog-secret %q: want namespace/name", o.DatadogSecret)
		}
		secret := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
			return nil, nil, fmt.Errorf("--datadog-secret: reading %s: %w", o.DatadogSecret, err)
		}
		apiKey, appKey, err := datadog.KeysFromSecret(secret)
		if err != nil {
			return nil, nil, fmt.Errorf("--datadog-secret: %w", err)
		}
		d, err := datadog.New(datadog.Config{APIKey: apiKey, AppKey: appKey, Site: o.DatadogSite, TTL: o.DatadogQueryTTL})
		if err != nil {
			return nil, nil, fmt.Errorf("--datadog-site: %w", err)
		}
		dd = d
	}
	return prom, dd, nil
}
