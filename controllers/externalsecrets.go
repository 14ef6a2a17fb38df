package controllers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/medium/picchu/plan/manifests"
)

// ExternalSecretsCache is the cache the controllers read and watch the
// delivery cluster's ExternalSecrets through, added to mgr: in namespaces
// (every namespace when empty), as the operator reads Secrets and
// ConfigMaps only there. It is nil when the delivery cluster does not serve
// the kind, asked once: one that starts to serve it is seen when the
// operator restarts. A cache of its own, because the manager's would fail
// to start on a cluster without the kind.
func ExternalSecretsCache(mgr ctrl.Manager, namespaces []string) (cache.Cache, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(manifests.ExternalSecretKind.GroupKind(), manifests.ExternalSecretKind.Version)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("asking the delivery cluster whether it serves %s: %w", manifests.ExternalSecretKind, err)
	}
	opts := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		// Nothing reads their managed fields.
		DefaultTransform: cache.TransformStripManagedFields()}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the cache of ExternalSecrets: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the cache of ExternalSecrets: %w", err)
	}
	return c, nil
}
