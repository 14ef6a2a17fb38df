package kubevalidation

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"        // apps/v1 in legacyscheme
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install" // autoscaling/v2
	_ "k8s.io/kubernetes/pkg/apis/core/install"        // v1
	_ "k8s.io/kubernetes/pkg/apis/policy/install"      // policy/v1
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"        // rbac.authorization.k8s.io/v1
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
)

// kinds are the create strategies and resources of the core kinds the
// builders make, and of the pods the ReplicaSet controller makes of theirs.
var kinds = map[string]struct {
	strategy rest.RESTCreateStrategy
	resource string
}{
	"Namespace":               {namespace.Strategy, "namespaces"},
	"ServiceAccount":          {serviceaccount.Strategy, "serviceaccounts"},
	"ConfigMap":               {configmap.Strategy, "configmaps"},
	"Secret":                  {secret.Strategy, "secrets"},
	"Service":                 {service.Strategy, "services"},
	"ReplicaSet":              {replicaset.Strategy, "replicasets"},
	"Pod":                     {pod.Strategy, "pods"},
	"PodDisruptionBudget":     {poddisruptionbudget.Strategy, "poddisruptionbudgets"},
	"HorizontalPodAutoscaler": {horizontalpodautoscaler.Strategy, "horizontalpodautoscalers"},
	"Role":                    {role.Strategy, "roles"},
	"RoleBinding":             {rolebinding.Strategy, "rolebindings"},
}

// Validate runs a target API server's create path on obj, a versioned
// object as a builder makes it: encoded, decoded into the internal type with
// the scheme's defaults, given its system metadata, then prepared and
// validated by its kind's registry strategy, metadata included.
func Validate(obj runtime.Object) error {
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("kind of %T: %w", obj, err)
	}
	gvk := gvks[0]
	kind, ok := kinds[gvk.Kind]
	if !ok {
		return fmt.Errorf("no create strategy for %s", gvk)
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", gvk.Kind, err)
	}
	internal, _, err := legacyscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("decoding %s %s: %w", gvk.Kind, data, err)
	}
	accessor, err := meta.Accessor(internal)
	if err != nil {
		return fmt.Errorf("metadata of %s: %w", gvk.Kind, err)
	}
	rest.FillObjectMetaSystemFields(accessor)
	ctx := genericapirequest.WithNamespace(genericapirequest.NewContext(), accessor.GetNamespace())
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: gvk.Group, APIVersion: gvk.Version,
		Resource: kind.resource, Namespace: accessor.GetNamespace(), Name: accessor.GetName(),
	})
	if err := rest.BeforeCreate(kind.strategy, ctx, internal); err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, accessor.GetNamespace(), accessor.GetName(), err)
	}
	return nil
}
