package clustersecrets

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
)

// The marks of Picchu's copies, and of the namespaces it creates for them.
const (
	// LabelOwner marks a copy made by a ClusterSecrets: its value is
	// OwnerLabelValue of the ClusterSecrets. The caches of the target
	// clusters hold only Secrets with this label.
	LabelOwner = "picchu.medium.engineering/clustersecrets"
	// AnnotationOwner names the ClusterSecrets ("<namespace>/<name>") that
	// made a copy, or created a namespace. It is what ownership is decided
	// on: Picchu updates and deletes only copies that carry its own name.
	AnnotationOwner = "picchu.medium.engineering/clustersecrets"
	// Finalizer holds a ClusterSecrets until its copies are removed.
	Finalizer = "picchu.medium.engineering/clustersecrets"
)

// Fields a field selector may name, as the API servers allow them: Secrets
// are selectable by name, namespace and type; Clusters, as every custom
// resource, by name and namespace.
var (
	secretFields  = []string{"metadata.name", "metadata.namespace", "type"}
	clusterFields = []string{"metadata.name", "metadata.namespace"}
)

// Selection is a ClusterSecrets' spec, parsed.
type Selection struct {
	// Owner is the ClusterSecrets ("<namespace>/<name>"), as
	// AnnotationOwner says it.
	Owner string
	// SourceNamespace holds the Secrets; Secrets and SecretFields select them.
	SourceNamespace string
	Secrets         labels.Selector
	SecretFields    fields.Selector
	// Clusters and ClusterFields select the Clusters of the ClusterSecrets'
	// namespace.
	Clusters      labels.Selector
	ClusterFields fields.Selector
	// TargetNamespace is where the copies go.
	TargetNamespace string
	// Labels and Annotations are the copies', ownership marks included.
	Labels, Annotations map[string]string
}

// Problem is a field of a spec Picchu cannot act on, and why. It names the
// field and quotes only what the spec says, never a Secret's values.
type Problem struct {
	Field   string
	Message string
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

// Parse parses and checks the spec of the ClusterSecrets cs. A selector
// that does not parse, a field selector on a field the API server does not
// select by, an invalid namespace name, label or annotation, or a label or
// annotation that would take the place of an ownership mark, is a Problem
// naming the field: Picchu acts on nothing until it is fixed. Parse never
// panics, whatever the strings (the webhook rejects most of these, but
// webhooks can be off).
func Parse(cs *picchuv1alpha1.ClusterSecrets) (Selection, []Problem) {
	var problems []Problem
	add := func(path *field.Path, format string, args ...any) {
		problems = append(problems, Problem{Field: path.String(), Message: fmt.Sprintf(format, args...)})
	}
	spec := field.NewPath("spec")
	src, dst := spec.Child("source"), spec.Child("target")
	owner := types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}.String()
	sel := Selection{
		Owner:           owner,
		SourceNamespace: cs.Spec.Source.Namespace,
		TargetNamespace: cs.Spec.Target.Namespace,
	}
	var err error
	if sel.Secrets, err = labels.Parse(cs.Spec.Source.LabelSelector); err != nil {
		add(src.Child("labelSelector"), "%v", err)
	}
	if sel.SecretFields, err = parseFields(cs.Spec.Source.FieldSelector, secretFields); err != nil {
		add(src.Child("fieldSelector"), "%v", err)
	}
	if sel.Clusters, err = labels.Parse(cs.Spec.Target.LabelSelector); err != nil {
		add(dst.Child("labelSelector"), "%v", err)
	}
	if sel.ClusterFields, err = parseFields(cs.Spec.Target.FieldSelector, clusterFields); err != nil {
		add(dst.Child("fieldSelector"), "%v", err)
	}
	for _, ns := range []struct {
		path  *field.Path
		value string
	}{{src.Child("namespace"), sel.SourceNamespace}, {dst.Child("namespace"), sel.TargetNamespace}} {
		if msgs := validation.IsDNS1123Label(ns.value); len(msgs) > 0 {
			add(ns.path, "%q is not a namespace name: %s", ns.value, strings.Join(msgs, "; "))
		}
	}
	for _, e := range metav1validation.ValidateLabels(cs.Spec.Target.Labels, dst.Child("labels")) {
		problems = append(problems, Problem{Field: e.Field, Message: e.ErrorBody()})
	}
	for _, e := range apivalidation.ValidateAnnotations(cs.Spec.Target.Annotations, dst.Child("annotations")) {
		problems = append(problems, Problem{Field: e.Field, Message: e.ErrorBody()})
	}
	if _, ok := cs.Spec.Target.Labels[LabelOwner]; ok {
		add(dst.Child("labels").Key(LabelOwner), "is Picchu's mark of the copies it owns")
	}
	if _, ok := cs.Spec.Target.Annotations[AnnotationOwner]; ok {
		add(dst.Child("annotations").Key(AnnotationOwner), "is Picchu's mark of the copies it owns")
	}
	if len(problems) > 0 {
		return Selection{}, problems
	}
	sel.Labels = withMark(cs.Spec.Target.Labels, LabelOwner, OwnerLabelValue(cs.Namespace, cs.Name))
	sel.Annotations = withMark(cs.Spec.Target.Annotations, AnnotationOwner, owner)
	return sel, nil
}

// parseFields parses a field selector, which may only name fields among allowed.
func parseFields(s string, allowed []string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, err
	}
	for _, r := range sel.Requirements() {
		if !slices.Contains(allowed, r.Field) {
			return nil, fmt.Errorf("%q is not a field one can select by (only %s)", r.Field, strings.Join(allowed, ", "))
		}
	}
	return sel, nil
}

// withMark returns a copy of m with key set to value.
func withMark(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}

// OwnerLabelValue is the value of LabelOwner on the copies of the
// ClusterSecrets namespace/name: its name when that is a valid label value,
// else a prefix of it and a hash of namespace and name. Several
// ClusterSecrets may share a value (the same name in two namespaces):
// AnnotationOwner tells them apart.
func OwnerLabelValue(namespace, name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	hash := hex.EncodeToString(sum[:])[:10]
	prefix := strings.TrimRight(name[:min(len(name), validation.LabelValueMaxLength-len(hash)-1)], "-_.")
	return prefix + "-" + hash
}

// OwnedBy says whether the copy obj was made by the ClusterSecrets owner
// ("<namespace>/<name>").
func OwnedBy(obj *corev1.Secret, owner string) bool {
	return obj.Annotations[AnnotationOwner] == owner
}
