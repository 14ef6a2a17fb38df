package operator

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeliveryCache is the delivery cluster's cache: Secrets and ConfigMaps,
// the only kinds Picchu reads that are not its own, come only from
// namespaces (every namespace when empty). Picchu reads two sorts of them,
// both in the namespace of the object that names them: a Cluster's
// credentials (the Secret of the Cluster's name) and a Revision's
// configSelector (any Secret or ConfigMap of the Revision's namespace whose
// labels match). A namespace restriction loses neither when Clusters and
// Revisions live in namespaces; a label or field selector would hide from a
// configSelector the Secrets it matches but the cache's selector does not.
//
// Objects are stored without their managed fields, which nothing Picchu
// decides reads, and which would be most of a cached object's size; a
// write of an object read from the cache leaves them as the API server has
// them.
func DeliveryCache(namespaces []string) cache.Options {
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if len(namespaces) == 0 {
		return opts
	}
	only := func() map[string]cache.Config {
		m := make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			m[ns] = cache.Config{}
		}
		return m
	}
	opts.ByObject = map[client.Object]cache.ByObject{
		&corev1.Secret{}:    {Namespaces: only()},
		&corev1.ConfigMap{}: {Namespaces: only()},
	}
	return opts
}
