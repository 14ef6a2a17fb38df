package manifests

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// ExternalSecretKind is External Secrets Operator's ExternalSecret. Picchu
// does not build against its Go module: its objects are read and written
// unstructured, and a cluster that does not serve the kind has none.
var ExternalSecretKind = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}

// ExternalSecretCopy is a build's copy of an ExternalSecret its
// configSelector selects on the delivery cluster: same name and spec, in
// the app's namespace, with the build's labels instead of the source's (as
// ConfigMapCopy), so it goes with the build. External Secrets Operator on
// the target cluster makes the Secret it names (ExternalSecretTarget) from
// the store the spec names, which must exist there. The source is not
// modified.
func ExternalSecretCopy(app, target, tag string, src *unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if spec, ok := src.Object["spec"]; ok {
		u.Object["spec"] = runtime.DeepCopyJSONValue(spec)
	}
	u.SetGroupVersionKind(ExternalSecretKind)
	u.SetName(src.GetName())
	u.SetNamespace(picchuv1alpha1.AppNamespace(app, target))
	u.SetLabels(TagSelector(app, target, tag))
	return u
}

// ExternalSecretTarget is the name of the Secret an ExternalSecret makes:
// its spec.target.name, else its own name (External Secrets Operator's
// default).
func ExternalSecretTarget(es *unstructured.Unstructured) string {
	if name, _, _ := unstructured.NestedString(es.Object, "spec", "target", "name"); name != "" {
		return name
	}
	return es.GetName()
}
