package mirror

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watchExternalSecrets sets up the reading and watching of the delivery
// cluster's ExternalSecrets as the release engine does, when it serves the
// kind, asked once: a cache of their own in ConfigNamespaces (every
// namespace when empty), whose changes bring the Mirrors that may copy
// them. A delivery cluster that does not serve them has none to copy; one
// that starts to serve them is seen when the operator restarts.
func (r *Reconciler) watchExternalSecrets(mgr ctrl.Manager) (source.Source, error) {
	_, err := mgr.GetRESTMapper().RESTMapping(ExternalSecretKind.GroupKind(), ExternalSecretKind.Version)
	switch {
	case meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("asking the delivery cluster whether it serves %s: %w", ExternalSecretKind, err)
	}
	opts := cache.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()}
	if len(r.ConfigNamespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range r.ConfigNamespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	c, err := cache.New(mgr.GetConfig(), opts)
	if err != nil {
		return nil, fmt.Errorf("creating the mirror's cache of ExternalSecrets: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the mirror's cache of ExternalSecrets: %w", err)
	}
	r.externalSecrets = c
	es := &unstructured.Unstructured{}
	es.SetGroupVersionKind(ExternalSecretKind)
	return source.Kind[client.Object](c, es, handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.mirrorsSelectingIn(ctx, obj.GetNamespace())
		})), nil
}

// listExternalSecrets returns the ExternalSecrets of namespace that sel
// selects: none when the delivery cluster does not serve them.
func (r *Reconciler) listExternalSecrets(ctx context.Context, namespace string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	if r.externalSecrets == nil {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(ExternalSecretKind.GroupVersion().WithKind(ExternalSecretKind.Kind + "List"))
	if err := r.externalSecrets.List(ctx, list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing the external secrets of namespace %s: %w", namespace, err)
	}
	return list.Items, nil
}

// externalSecretGone says whether the ExternalSecret namespace/name is
// known not to exist at home: never when the delivery cluster does not
// serve them.
func (r *Reconciler) externalSecretGone(ctx context.Context, namespace, name string) (bool, error) {
	if r.externalSecrets == nil {
		return false, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(ExternalSecretKind)
	err := r.externalSecrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading external secret %s/%s: %w", namespace, name, err)
	}
	return false, nil
}
