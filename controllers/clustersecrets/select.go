package clustersecrets

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/fleet/access"
)

// Withheld is a Secret the selectors select that is never copied, and why.
type Withheld struct {
	Name string
	Why  string
}

// SelectSecrets returns, sorted by name, the Secrets of secrets (the source
// namespace's, from the cache) that sel selects and that may be copied;
// and those it selects that hold credentials, which are never copied: the
// Secret of a Cluster of the source namespace (clusters names them), one
// labelled picchu.medium.engineering/credentials, and a service-account
// token. The field selector is applied here, in memory, as the cache
// cannot. Secrets being deleted are gone already.
func SelectSecrets(sel Selection, secrets []corev1.Secret, clusters map[string]bool) (copied []*corev1.Secret, withheld []Withheld) {
	for i := range secrets {
		s := &secrets[i]
		if s.Namespace != sel.SourceNamespace || !s.DeletionTimestamp.IsZero() ||
			!sel.Secrets.Matches(labels.Set(s.Labels)) || !sel.SecretFields.Matches(secretFieldSet(s)) {
			continue
		}
		if why := access.Credentials(s, clusters); why != "" {
			withheld = append(withheld, Withheld{Name: s.Name, Why: why})
			continue
		}
		copied = append(copied, s)
	}
	slices.SortFunc(copied, func(a, b *corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(withheld, func(a, b Withheld) int { return strings.Compare(a.Name, b.Name) })
	return copied, withheld
}

// secretFieldSet is what a field selector sees of a Secret.
func secretFieldSet(s *corev1.Secret) fields.Set {
	return fields.Set{"metadata.name": s.Name, "metadata.namespace": s.Namespace, "type": string(s.Type)}
}

// SelectClusters splits the enabled Clusters of clusters, those not being
// deleted, into those sel selects and the others, each sorted by name.
// Disabled Clusters are in neither: Picchu has no client for them.
func SelectClusters(sel Selection, clusters []picchuv1alpha1.Cluster) (selected, others []*picchuv1alpha1.Cluster) {
	for i := range clusters {
		c := &clusters[i]
		if !c.Spec.Enabled || !c.DeletionTimestamp.IsZero() {
			continue
		}
		f := fields.Set{"metadata.name": c.Name, "metadata.namespace": c.Namespace}
		if sel.Clusters.Matches(labels.Set(c.Labels)) && sel.ClusterFields.Matches(f) {
			selected = append(selected, c)
		} else {
			others = append(others, c)
		}
	}
	byName := func(a, b *picchuv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(selected, byName)
	slices.SortFunc(others, byName)
	return selected, others
}

// Copies are the copies of secrets that sel wants on every cluster it
// selects: in the target namespace, with the same name, type and data, and
// sel's labels and annotations (the ownership marks included) in place of
// the source's.
func Copies(sel Selection, secrets []*corev1.Secret) []*corev1.Secret {
	out := make([]*corev1.Secret, 0, len(secrets))
	for _, s := range secrets {
		data := make(map[string][]byte, len(s.Data))
		for k, v := range s.Data {
			data[k] = slices.Clone(v)
		}
		c := &corev1.Secret{Type: s.Type, Data: data}
		c.Name, c.Namespace = s.Name, sel.TargetNamespace
		c.Labels, c.Annotations = maps.Clone(sel.Labels), maps.Clone(sel.Annotations)
		out = append(out, c)
	}
	return out
}
