package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/plan/manifests"
)

// What every copy on a mirror carries.
const (
	// LabelMirrored marks an object a Mirror copied to a mirror cluster
	// (value "true"): the copies deleted when their source is are found by it.
	LabelMirrored = "picchu.medium.engineering/mirrored"
	// AnnotationMirror names the Mirror that wrote the copy, as
	// "<namespace>/<name>" on the home delivery cluster.
	AnnotationMirror = "picchu.medium.engineering/mirror"
	// AnnotationMirrorInstance names the Picchu (its --instance-id) whose
	// Mirror wrote the copy: Mirrors of the same name on two home clusters
	// never take each other's copies for theirs.
	AnnotationMirrorInstance = "picchu.medium.engineering/mirror-instance"
	// AnnotationMirrorHash is the hash of what the Mirror last applied: a
	// copy that carries the hash of what it should hold, and holds it, is
	// not written again.
	AnnotationMirrorHash = "picchu.medium.engineering/mirror-hash"
	// FieldManager owns every field Picchu applies to a copy.
	FieldManager = "picchu-mirror"
)

// annotationLastApplied is kubectl's record of what it applied at home.
const annotationLastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// The kinds a Mirror copies.
var (
	RevisionKind       = picchuv1alpha1.GroupVersion.WithKind("Revision")
	ConfigMapKind      = corev1.SchemeGroupVersion.WithKind("ConfigMap")
	SecretKind         = corev1.SchemeGroupVersion.WithKind("Secret")
	ExternalSecretKind = manifests.ExternalSecretKind
	namespaceKind      = corev1.SchemeGroupVersion.WithKind("Namespace")
)

// Skip says why a Revision is not copied now; SkipNone copies it.
type Skip string

const (
	SkipNone Skip = ""
	// SkipDisabled: spec.disableMirroring.
	SkipDisabled Skip = "disableMirroring"
	// SkipNotDeployed: no replica of the build runs or is asked for.
	SkipNotDeployed Skip = "not deployed"
	// SkipDeleting: the Revision is being deleted.
	SkipDeleting Skip = "being deleted"
	// SkipUndecodable: the stored Revision does not fit the Go types.
	SkipUndecodable Skip = "undecodable"
)

// Decide says whether a Revision is copied now: once its build is deployed
// somewhere (Deployed), unless it disables mirroring, is being deleted or
// could not be decoded.
func Decide(rev *picchuv1alpha1.Revision, deployed bool) Skip {
	switch {
	case !rev.DeletionTimestamp.IsZero():
		return SkipDeleting
	case rev.DecodeError() != nil:
		return SkipUndecodable
	case rev.Spec.DisableMirroring:
		return SkipDisabled
	case !deployed:
		return SkipNotDeployed
	}
	return SkipNone
}

// Deployed says whether a build runs somewhere: a target of its Revision's
// status, or a ReleaseManager of its app, counts current or desired
// replicas of its tag. The ReleaseManagers see it first: the Revision's
// status follows them at most every few seconds.
func Deployed(rev *picchuv1alpha1.Revision, rms []*picchuv1alpha1.ReleaseManager) bool {
	for _, t := range rev.Status.Targets {
		if t.Scale.Current+t.Scale.Desired > 0 {
			return true
		}
	}
	for _, rm := range rms {
		if rm.Namespace != rev.Namespace || rm.Spec.App != rev.Spec.App.Name {
			continue
		}
		for _, st := range rm.Status.Revisions {
			if st.Tag == rev.Spec.App.Tag && st.Scale.Current+st.Scale.Desired > 0 {
				return true
			}
		}
	}
	return false
}

// DeployedTags are the tags an app's ReleaseManager counts replicas of.
func DeployedTags(rm *picchuv1alpha1.ReleaseManager) map[string]bool {
	out := map[string]bool{}
	for _, st := range rm.Status.Revisions {
		if st.Scale.Current+st.Scale.Desired > 0 {
			out[st.Tag] = true
		}
	}
	return out
}

// AdditionalSelector is where an additionalConfigSelector selects for a
// build (its namespace, home's when empty) and what: its labelSelector
// (everything when unset) and appLabelName=app and tagLabelName=tag.
func AdditionalSelector(a picchuv1alpha1.AdditionalConfigSelector, home, app, tag string) (string, labels.Selector, error) {
	ns := a.Namespace
	if ns == "" {
		ns = home
	}
	sel := labels.Everything()
	if a.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(a.LabelSelector); err != nil {
			return "", nil, fmt.Errorf("additionalConfigSelector of namespace %s: labelSelector: %w", ns, err)
		}
	}
	for _, l := range []struct{ what, key, value string }{
		{"appLabelName", a.AppLabelName, app}, {"tagLabelName", a.TagLabelName, tag},
	} {
		req, err := labels.NewRequirement(l.key, selection.Equals, []string{l.value})
		if err != nil {
			return "", nil, fmt.Errorf("additionalConfigSelector of namespace %s: %s %q: %w", ns, l.what, l.key, err)
		}
		sel = sel.Add(*req)
	}
	return ns, sel, nil
}

// RevisionCopy is the copy of rev on a mirror: its name, namespace and spec,
// with every target's externalTest.enabled false (the mirror's Picchu never
// waits for a test run against home), its labels and annotations without
// Picchu's bookkeeping (CopiedMeta), and no status.
func RevisionCopy(rev *picchuv1alpha1.Revision, mirror Origin) (*unstructured.Unstructured, error) {
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&rev.Spec)
	if err != nil {
		return nil, fmt.Errorf("converting the spec of revision %s/%s: %w", rev.Namespace, rev.Name, err)
	}
	targets, _ := spec["targets"].([]any)
	for i, t := range targets {
		target, ok := t.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("converting the spec of revision %s/%s: target %d is a %T", rev.Namespace, rev.Name, i, t)
		}
		test, _ := target["externalTest"].(map[string]any)
		if test == nil {
			test = map[string]any{}
		}
		// Set, not left out: the copy's field is owned false.
		test["enabled"] = false
		target["externalTest"] = test
	}
	labels, annotations := CopiedMeta(rev.Labels, rev.Annotations, true)
	return seal(RevisionKind, rev.Namespace, rev.Name, labels, annotations, map[string]any{"spec": spec}, mirror)
}

// ConfigMapCopy is the copy of a ConfigMap on a mirror: same name,
// namespace, data, labels and annotations (CopiedMeta).
func ConfigMapCopy(cm *corev1.ConfigMap, mirror Origin) (*unstructured.Unstructured, error) {
	body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.ConfigMap{
		Data: cm.Data, BinaryData: cm.BinaryData, Immutable: cm.Immutable,
	})
	if err != nil {
		return nil, fmt.Errorf("converting config map %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	delete(body, "metadata")
	labels, annotations := CopiedMeta(cm.Labels, cm.Annotations, false)
	return seal(ConfigMapKind, cm.Namespace, cm.Name, labels, annotations, body, mirror)
}

// SecretCopy is the copy of a Secret on a mirror, as ConfigMapCopy, with its type.
func SecretCopy(s *corev1.Secret, mirror Origin) (*unstructured.Unstructured, error) {
	body, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.Secret{
		Data: s.Data, Type: s.Type, Immutable: s.Immutable,
	})
	if err != nil {
		return nil, fmt.Errorf("converting secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	delete(body, "metadata")
	labels, annotations := CopiedMeta(s.Labels, s.Annotations, false)
	return seal(SecretKind, s.Namespace, s.Name, labels, annotations, body, mirror)
}

// ExternalSecretCopy is the copy of an ExternalSecret on a mirror: every
// field but its status, with labels and annotations as ConfigMapCopy. The
// mirror's external-secrets operator fetches the secret there.
func ExternalSecretCopy(es *unstructured.Unstructured, mirror Origin) (*unstructured.Unstructured, error) {
	body := map[string]any{}
	for k, v := range es.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			body[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	labels, annotations := CopiedMeta(es.GetLabels(), es.GetAnnotations(), false)
	return seal(ExternalSecretKind, es.GetNamespace(), es.GetName(), labels, annotations, body, mirror)
}

// CopiedMeta are the labels and annotations a copy carries: its source's,
// without kubectl's last-applied configuration and the marks of an earlier
// mirror, and, for a Revision, without Picchu's bookkeeping of the release
// at home, which the mirror's Picchu keeps for its own: the fleet and
// target-deletable labels, the failure annotations written with
// spec.failed, and the manual controls (pause, promote, rollback, when it
// was received, and who made them).
func CopiedMeta(l, a map[string]string, revision bool) (map[string]string, map[string]string) {
	outL := map[string]string{}
	for k, v := range l {
		if k == LabelMirrored || (revision && (strings.HasPrefix(k, picchuv1alpha1.LabelTargetDeletablePrefix) ||
			strings.HasPrefix(k, picchuv1alpha1.LabelFleetPrefix))) {
			continue
		}
		outL[k] = v
	}
	outA := map[string]string{}
	for k, v := range a {
		switch k {
		case annotationLastApplied, AnnotationMirror, AnnotationMirrorHash:
			continue
		case picchuv1alpha1.AnnotationFailedAt, picchuv1alpha1.AnnotationFailedReason,
			picchuv1alpha1.AnnotationPause, picchuv1alpha1.AnnotationPromote,
			picchuv1alpha1.AnnotationRollback, picchuv1alpha1.AnnotationRollbackAt, picchuv1alpha1.AnnotationControlBy:
			if revision {
				continue
			}
		}
		outA[k] = v
	}
	return outL, outA
}

// seal builds a copy from its parts, marks it as the mirror's, and adds the
// hash of all that.
func seal(gvk schema.GroupVersionKind, namespace, name string, l, a map[string]string, body map[string]any, mirror Origin) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: body}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	l = maps.Clone(l)
	l[LabelMirrored] = "true"
	u.SetLabels(l)
	a = maps.Clone(a)
	a[AnnotationMirror] = mirror.String()
	if mirror.Instance != "" {
		a[AnnotationMirrorInstance] = mirror.Instance
	}
	u.SetAnnotations(a)
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding the copy of %s %s/%s: %w", gvk.Kind, namespace, name, err)
	}
	sum := sha256.Sum256(data)
	a[AnnotationMirrorHash] = hex.EncodeToString(sum[:16])
	u.SetAnnotations(a)
	return u, nil
}

// Hash is the hash a copy was sealed with.
func Hash(u *unstructured.Unstructured) string { return u.GetAnnotations()[AnnotationMirrorHash] }

// Origin is who writes a copy: a Mirror, by its namespace and name on its
// home cluster, run by one Picchu, its instance.
type Origin struct {
	types.NamespacedName
	// Instance is the Picchu's --instance-id.
	Instance string
}

// Ours says whether a live object on a mirror is a copy the mirror wrote:
// labelled a copy, annotated with the Mirror's name, and with its Picchu's
// instance, or none (a copy written before copies named their Picchu, which
// the next write marks).
func Ours(live *unstructured.Unstructured, mirror Origin) bool {
	a := live.GetAnnotations()
	instance, marked := a[AnnotationMirrorInstance]
	return live.GetLabels()[LabelMirrored] == "true" && a[AnnotationMirror] == mirror.String() &&
		(!marked || instance == mirror.Instance)
}

// Unchanged says whether live, an object read from the mirror, already
// holds the copy desired: it carries desired's hash, so every field an
// earlier apply set and desired no longer has is gone, and every field
// desired sets has its value there (fields only live has, such as the
// mirror's defaults and its Picchu's own labels, do not count).
func Unchanged(desired, live *unstructured.Unstructured) bool {
	if Hash(live) != Hash(desired) {
		return false
	}
	for k, v := range desired.Object {
		if k == "metadata" {
			continue
		}
		if !contains(live.Object[k], v) {
			return false
		}
	}
	for k, v := range desired.GetLabels() {
		if got, ok := live.GetLabels()[k]; !ok || got != v {
			return false
		}
	}
	for k, v := range desired.GetAnnotations() {
		if got, ok := live.GetAnnotations()[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// contains says whether have holds want: every key of a map want has, with
// a value have contains; lists of the same length whose items contain
// want's; equal scalars, numbers compared by value. An empty want (zero,
// "", false, empty map or list) is held by a missing have.
func contains(have, want any) bool {
	if have == nil {
		return empty(want)
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return empty(have)
	}
	if hn, ok := number(have); ok {
		wn, ok := number(want)
		return ok && hn == wn
	}
	return have == want
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	n, ok := number(v)
	return ok && n == 0
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}
