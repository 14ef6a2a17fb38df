package mirror

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// watchExternalSecrets reads the delivery cluster's ExternalSecrets
// through the cache ExternalSecrets (controllers.ExternalSecretsCache, the
// release engine's too; nil when the cluster does not serve them, so there
// are none to copy), and returns the source that brings the Mirrors that
// may copy one that changes.
func (r *Reconciler) watchExternalSecrets() source.Source {
	if r.ExternalSecrets == nil {
		return nil
	}
	r.externalSecrets = r.ExternalSecrets
	es := &unstructured.Unstructured{}
	es.SetGroupVersionKind(ExternalSecretKind)
	return source.Kind[client.Object](r.ExternalSecrets, es, handler.EnqueueRequestsFromMapFunc(
		func(ctx context.Context, obj client.Object) []reconcile.Request {
			return r.mirrorsSelectingIn(ctx, obj.GetNamespace())
		}))
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
