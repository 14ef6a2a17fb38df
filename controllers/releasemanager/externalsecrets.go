package releasemanager

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// watchExternalSecrets reads the delivery cluster's ExternalSecrets
// through the cache ExternalSecrets (controllers.ExternalSecretsCache; nil
// when the cluster does not serve them, so there are none to copy), and
// returns the source that runs the ReleaseManagers of the Revisions that
// select one that changes.
func (r *Reconciler) watchExternalSecrets() source.Source {
	if r.ExternalSecrets == nil {
		return nil
	}
	r.externalSecrets = r.ExternalSecrets
	es := &unstructured.Unstructured{}
	es.SetGroupVersionKind(manifests.ExternalSecretKind)
	return source.Kind[client.Object](r.ExternalSecrets, es, handler.EnqueueRequestsFromMapFunc(r.releaseManagersOfConfig))
}

// readExternalSecrets reads the ExternalSecrets sel selects in ns, sorted by
// name: none when the delivery cluster does not serve them.
func (r *Reconciler) readExternalSecrets(ctx context.Context, ns string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	if r.externalSecrets == nil {
		return nil, nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(manifests.ExternalSecretKind.GroupVersion().WithKind(manifests.ExternalSecretKind.Kind + "List"))
	if err := r.externalSecrets.List(ctx, list, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing external secrets in %s: %w", ns, err)
	}
	items := list.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return items, nil
}

// externalSecretTargets are the Secrets the build's ExternalSecrets make,
// each once, in the order of the ExternalSecrets.
func externalSecretTargets(srcs []unstructured.Unstructured) []string {
	var out []string
	for i := range srcs {
		if name := manifests.ExternalSecretTarget(&srcs[i]); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// clusterSet is a set of cluster names that the clusters' applies, which
// run at once, add to.
type clusterSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (cs *clusterSet) add(name string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.names == nil {
		cs.names = map[string]bool{}
	}
	cs.names[name] = true
}

// sorted are the names in the set, sorted.
func (cs *clusterSet) sorted() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	out := make([]string, 0, len(cs.names))
	for name := range cs.names {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// copiesExternalSecrets says a build synced this run has ExternalSecrets.
func (s *snapshot) copiesExternalSecrets() bool {
	return slices.ContainsFunc(s.incarnations, func(inc *incarnation) bool {
		return inc.revision != nil && len(inc.externalSecrets) > 0
	})
}

// setExternalSecretsCondition sets ExternalSecretsServed: False naming the
// clusters that do not serve ExternalSecrets while builds have some, True
// when every cluster synced this run does, and removes it when no build
// has any.
func setExternalSecretsCondition(rm *picchuv1alpha1.ReleaseManager, copies bool, missing []string) {
	switch {
	case len(missing) > 0:
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionExternalSecretsServed, Status: metav1.ConditionFalse, Reason: picchuv1alpha1.ReasonExternalSecretsNotServed,
			Message: fmt.Sprintf("%s do not serve %s: the builds run there without the Secrets of their ExternalSecrets (their envFrom is optional there)",
				strings.Join(missing, ", "), manifests.ExternalSecretKind.GroupVersion().String()+" ExternalSecret"),
			ObservedGeneration: rm.Generation,
		})
	case copies:
		meta.SetStatusCondition(&rm.Status.Conditions, metav1.Condition{
			Type: picchuv1alpha1.ConditionExternalSecretsServed, Status: metav1.ConditionTrue, Reason: picchuv1alpha1.ReasonExternalSecretsServed,
			Message: "every cluster synced copies the builds' ExternalSecrets", ObservedGeneration: rm.Generation,
		})
	default:
		meta.RemoveStatusCondition(&rm.Status.Conditions, picchuv1alpha1.ConditionExternalSecretsServed)
	}
}
