package operator

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
	"github.com/medium/picchu/fleet/access"
)

// setupClusterSecrets adds the ClusterSecrets controller to mgr: it copies
// the Secrets of the delivery cluster's watched namespaces (o.Namespaces)
// that each ClusterSecrets selects, in its own namespace or one of
// o.CrossNamespaceSources, to the Clusters it selects, reaching them
// through registry.
func setupClusterSecrets(mgr ctrl.Manager, registry *access.Registry, o Options) error {
	if err := (&clustersecrets.Reconciler{
		Client:                mgr.GetClient(),
		Registry:              registry,
		Recorder:              mgr.GetEventRecorder("picchu"),
		Namespaces:            o.Namespaces,
		CrossNamespaceSources: o.CrossNamespaceSources,
		ProtectedNamespaces:   picchuv1alpha1.SecretProtectedNamespaces(o.ProtectedNamespaces),
		SyncPeriod:            o.SyncPeriod,
		ClusterTimeout:        o.ClusterTimeout,
		Shards:                o.Shards,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the clustersecrets controller: %w", err)
	}
	return nil
}
