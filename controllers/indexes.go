package controllers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// indexed remembers the caches that have the Revision index, so that each
// controller can ask for it and it is added once per manager.
var indexed sync.Map

// IndexRevisionsByApp adds the index picchuv1alpha1.RevisionAppField
// (spec.app.name) over Revisions to cache c, once. Revisions are found by
// the app they are, never by the app label alone: a Revision created by
// kubectl replace, Argo CD or Flux before Picchu labels it still belongs to
// its app.
func IndexRevisionsByApp(ctx context.Context, c cache.Cache) error {
	if _, done := indexed.LoadOrStore(c, true); done {
		return nil
	}
	err := c.IndexField(ctx, &picchuv1alpha1.Revision{}, picchuv1alpha1.RevisionAppField, func(obj client.Object) []string {
		rev, ok := obj.(*picchuv1alpha1.Revision)
		if !ok || rev.Spec.App.Name == "" {
			return nil
		}
		return []string{rev.Spec.App.Name}
	})
	if err != nil {
		indexed.Delete(c)
		return fmt.Errorf("indexing revisions by %s: %w", picchuv1alpha1.RevisionAppField, err)
	}
	return nil
}

// OfApp selects the Revisions of app: from the cache through its index, and
// from the API server through the CRD's selectable field.
func OfApp(app string) client.MatchingFields {
	return client.MatchingFields{picchuv1alpha1.RevisionAppField: app}
}

// Requests lists, with opts, the objects of list's kind and returns them as
// reconcile requests: what a watch's map function returns. A map function
// cannot return an error, so a failed list is logged, saying what was
// listed with keysAndValues, and maps to no request.
func Requests(ctx context.Context, c client.Reader, list client.ObjectList, what string, keysAndValues []any, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing "+what, keysAndValues...)
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "reading the list of "+what, keysAndValues...)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return reqs
}
