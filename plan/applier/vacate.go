package applier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// Vacated is what RemoveNamespace found in an app's namespace.
type Vacated struct {
	// Foreign names the objects Picchu did not create (kind/name), at most
	// maxForeign, and Count how many there were: the namespace was left.
	Foreign []string
	Count   int
	// Unlisted are the API groups the cluster could not say the kinds of:
	// what they hold is unknown, so the namespace was left.
	Unlisted []string
}

// Left says whether the namespace was left in place.
func (v Vacated) Left() bool { return v.Count > 0 || len(v.Unlisted) > 0 }

func (v Vacated) String() string {
	var parts []string
	if v.Count > 0 {
		more := ""
		if v.Count > len(v.Foreign) {
			more = fmt.Sprintf(" and %d more", v.Count-len(v.Foreign))
		}
		parts = append(parts, fmt.Sprintf("it holds objects Picchu did not create: %s%s", strings.Join(v.Foreign, ", "), more))
	}
	if len(v.Unlisted) > 0 {
		parts = append(parts, "the cluster did not list the kinds of "+strings.Join(v.Unlisted, ", "))
	}
	return strings.Join(parts, "; ")
}

// maxForeign is how many foreign objects Vacated names.
const maxForeign = 10

// RemoveNamespace removes an app's namespace, ns, labelled want: when
// every object in it is Picchu's for want (or made from one: an object
// with a controller, an Event), it deletes the namespace; when some other
// object is there (an add-on installed into it, a team's own), it deletes
// Picchu's objects alone, one by one, and leaves the namespace and what
// Picchu did not create, saying what it found. The kinds are the
// cluster's own (discovery): every namespaced kind it can list and delete.
func (c *Cluster) RemoveNamespace(ctx context.Context, ns *corev1.Namespace, want map[string]string) (Vacated, error) {
	if c.Discovery == nil {
		return Vacated{}, fmt.Errorf("removing namespace %s: no discovery client for cluster %s", ns.Name, c.Name())
	}
	live := &metav1.PartialObjectMetadata{}
	live.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Live.Get(ctx, client.ObjectKeyFromObject(ns), live); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return Vacated{}, nil
		}
		return Vacated{}, fmt.Errorf("reading namespace %s: %w", ns.Name, err)
	}
	if !c.Owner.Owns(want, live.GetLabels()) || picchuv1alpha1.Ignored(live.GetLabels()) {
		// Delete leaves it too, and says so.
		return Vacated{}, c.Delete(ctx, ns)
	}
	kinds, out, err := namespacedKinds(c.Discovery)
	if err != nil {
		return Vacated{}, fmt.Errorf("listing the kinds of cluster %s: %w", c.Name(), err)
	}
	var ours []metav1.PartialObjectMetadata
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.Live.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
			return out, fmt.Errorf("listing %s in namespace %s: %w", gvk.Kind, ns.Name, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			item.SetGroupVersionKind(gvk)
			switch {
			case madeByKubernetes(gvk, item):
			case !picchuv1alpha1.Ignored(item.GetLabels()) && c.Owner.Owns(want, item.GetLabels()):
				ours = append(ours, *item)
			default:
				out.Count++
				if len(out.Foreign) < maxForeign {
					out.Foreign = append(out.Foreign, gvk.Kind+"/"+item.GetName())
				}
			}
		}
	}
	if !out.Left() {
		return out, c.Delete(ctx, ns)
	}
	for i := range ours {
		item := &ours[i]
		key := objectKey{gvk: item.GroupVersionKind(), namespace: item.GetNamespace(), name: item.GetName()}
		if _, err := c.delete(ctx, key, want, item); err != nil {
			return out, err
		}
	}
	return out, nil
}

// namespacedKinds are the namespaced kinds the cluster serves that can be
// listed and deleted, at their preferred versions, and the groups it
// could not say the kinds of.
func namespacedKinds(d discovery.DiscoveryInterface) ([]schema.GroupVersionKind, Vacated, error) {
	var out Vacated
	lists, err := discovery.ServerPreferredNamespacedResources(d)
	if failed := (*discovery.ErrGroupDiscoveryFailed)(nil); errors.As(err, &failed) {
		for gv := range failed.Groups {
			out.Unlisted = append(out.Unlisted, gv.String())
		}
		slices.Sort(out.Unlisted)
	} else if err != nil {
		return nil, out, err
	}
	var kinds []schema.GroupVersionKind
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, out, fmt.Errorf("group version %q: %w", list.GroupVersion, err)
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			kinds = append(kinds, gv.WithKind(r.Kind))
		}
	}
	return kinds, out, nil
}

// madeByKubernetes says obj was made by Kubernetes in every namespace, or
// from another object, and goes with the namespace or its owner: Events,
// Endpoints (a Service's), anything with a controller (a ReplicaSet's
// pods, a Service's EndpointSlices), the default ServiceAccount, its legacy
// token Secrets, and the root CA ConfigMaps.
func madeByKubernetes(gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) bool {
	switch {
	case gvk.Kind == "Event" || gvk.Kind == "Endpoints" || metav1.GetControllerOfNoCopy(obj) != nil:
		return true
	case gvk.Group != "":
		return false
	case gvk.Kind == "ServiceAccount":
		return obj.GetName() == "default"
	case gvk.Kind == "ConfigMap":
		return obj.GetName() == "kube-root-ca.crt" || obj.GetName() == "openshift-service-ca.crt"
	case gvk.Kind == "Secret":
		return obj.GetAnnotations()[corev1.ServiceAccountNameKey] == "default"
	}
	return false
}
