package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/medium/picchu/controllers/mirror"
	"github.com/medium/picchu/fleet/access"
)

// setupMirrors adds the Mirror controller to mgr, and registers its
// failure counter with the metrics the operator serves. Its resync is the
// operator's, and its requests to one mirror in one run are bounded by
// o.ClusterTimeout (the controller's defaults when 0). Its
// additionalConfigSelectors may select only in the Mirror's namespace and
// o.CrossNamespaceSources.
func setupMirrors(mgr ctrl.Manager, registry *access.Registry, externalSecrets cache.Cache, o Options) error {
	if err := mirror.Register(ctrlmetrics.Registry); err != nil {
		return fmt.Errorf("registering the mirror metrics: %w", err)
	}
	if err := (&mirror.Reconciler{
		Client:                  mgr.GetClient(),
		ExternalSecrets:         externalSecrets,
		Registry:                registry,
		CrossNamespaceSources:   o.CrossNamespaceSources,
		Resync:                  o.SyncPeriod,
		Timeout:                 o.ClusterTimeout,
		MaxConcurrentReconciles: 2,
		Shards:                  o.Shards,
		InstanceID:              o.InstanceID,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the mirror controller: %w", err)
	}
	return nil
}
