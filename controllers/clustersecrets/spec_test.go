package clustersecrets_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	picchuv1alpha1 "github.com/medium/picchu/api/v1alpha1"
	"github.com/medium/picchu/controllers/clustersecrets"
)

func clusterSecrets(spec picchuv1alpha1.ClusterSecretsSpec) *picchuv1alpha1.ClusterSecrets {
	return &picchuv1alpha1.ClusterSecrets{
		ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "picchu", Generation: 3},
		Spec:       spec,
	}
}

func spec(srcLabels, srcFields, dstLabels, dstFields string) picchuv1alpha1.ClusterSecretsSpec {
	return picchuv1alpha1.ClusterSecretsSpec{
		Source: picchuv1alpha1.SecretSource{Namespace: "picchu", LabelSelector: srcLabels, FieldSelector: srcFields},
		Target: picchuv1alpha1.SecretTarget{Namespace: "shared", LabelSelector: dstLabels, FieldSelector: dstFields},
	}
}

func TestParse_NamesEveryFieldItCannotActOn(t *testing.T) {
	withTarget := func(s picchuv1alpha1.ClusterSecretsSpec, f func(*picchuv1alpha1.SecretTarget)) picchuv1alpha1.ClusterSecretsSpec {
		f(&s.Target)
		return s
	}
	tests := []struct {
		name string
		spec picchuv1alpha1.ClusterSecretsSpec
		// fields are the fields named by the problems, in order; none when it parses.
		fields []string
	}{
		{"empty selectors select everything", spec("", "", "", ""), nil},
		{"every selector", spec("app=api,team!=ops", "metadata.name=db,type!=kubernetes.io/tls", "env in (prod)", "metadata.name!=east"), nil},
		{"an unparsable label selector (bug 8)", spec("app in (a", "", "", ""), []string{"spec.source.labelSelector"}},
		{"a field selector without an operator", spec("", "", "", "metadata.name"), []string{"spec.target.fieldSelector"}},
		{"a field the API server does not select Secrets by", spec("", "data.password=x", "", ""), []string{"spec.source.fieldSelector"}},
		{"a field the API server does not select Clusters by", spec("", "", "", "spec.enabled=true"), []string{"spec.target.fieldSelector"}},
		{"all four", spec("!!", "=b", "a b", "metadata.name=a=b"), []string{
			"spec.source.labelSelector", "spec.source.fieldSelector", "spec.target.labelSelector", "spec.target.fieldSelector",
		}},
		{"a target namespace that is no namespace name", withTarget(spec("", "", "", ""), func(t *picchuv1alpha1.SecretTarget) {
			t.Namespace = "Not_A/Namespace"
		}), []string{"spec.target.namespace"}},
		{"an invalid label of the copies", withTarget(spec("", "", "", ""), func(t *picchuv1alpha1.SecretTarget) {
			t.Labels = map[string]string{"team": "not a label value"}
		}), []string{"spec.target.labels"}},
		{"an invalid annotation key", withTarget(spec("", "", "", ""), func(t *picchuv1alpha1.SecretTarget) {
			t.Annotations = map[string]string{"not a key": "v"}
		}), []string{"spec.target.annotations"}},
		{"a label in place of the ownership mark", withTarget(spec("", "", "", ""), func(t *picchuv1alpha1.SecretTarget) {
			t.Labels = map[string]string{clustersecrets.LabelOwner: "other"}
		}), []string{"spec.target.labels[picchu.medium.engineering/clustersecrets]"}},
		{"an annotation in place of the ownership mark", withTarget(spec("", "", "", ""), func(t *picchuv1alpha1.SecretTarget) {
			t.Annotations = map[string]string{clustersecrets.AnnotationOwner: "picchu/other"}
		}), []string{"spec.target.annotations[picchu.medium.engineering/clustersecrets]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, problems := clustersecrets.Parse(clusterSecrets(tt.spec))
			var fields []string
			for _, p := range problems {
				fields = append(fields, p.Field)
				if p.Message == "" {
					t.Errorf("problem of %s has no message", p.Field)
				}
			}
			if strings.Join(fields, " ") != strings.Join(tt.fields, " ") {
				t.Errorf("problems %v, want fields %v", problems, tt.fields)
			}
		})
	}
}

func TestParse_MarksTheCopies(t *testing.T) {
	s := spec("", "", "", "")
	s.Target.Labels = map[string]string{"team": "platform"}
	s.Target.Annotations = map[string]string{"note": "copied"}
	cs := clusterSecrets(s)
	sel, problems := clustersecrets.Parse(cs)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if sel.Owner != "picchu/shared" {
		t.Errorf("owner %q", sel.Owner)
	}
	if got := sel.Labels; len(got) != 2 || got["team"] != "platform" || got[clustersecrets.LabelOwner] != "shared" {
		t.Errorf("labels %v", got)
	}
	if got := sel.Annotations; len(got) != 2 || got["note"] != "copied" || got[clustersecrets.AnnotationOwner] != "picchu/shared" {
		t.Errorf("annotations %v", got)
	}
	if len(s.Target.Labels) != 1 || len(s.Target.Annotations) != 1 {
		t.Errorf("the spec's maps were written to: %v %v", s.Target.Labels, s.Target.Annotations)
	}
}

func TestOwnerLabelValue_IsAlwaysALabelValue(t *testing.T) {
	long := strings.Repeat("a.b-c", 50)
	tests := []struct {
		namespace, name string
		want            string // "" when it is hashed
	}{
		{"picchu", "shared", "shared"},
		{"picchu", "a.b-c", "a.b-c"},
		{"picchu", long, ""},
		{"other", long, ""},
		{"picchu", strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{"picchu", strings.Repeat("x", 62) + "-" + "y", ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		got := clustersecrets.OwnerLabelValue(tt.namespace, tt.name)
		if msgs := validation.IsValidLabelValue(got); len(msgs) > 0 {
			t.Errorf("%s/%s: %q is not a label value: %v", tt.namespace, tt.name, got, msgs)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
		if tt.want == "" && seen[got] {
			t.Errorf("%s/%s: %q is another's", tt.namespace, tt.name, got)
		}
		seen[got] = true
	}
}

// FuzzParse holds Parse to never panicking, whatever the selectors (the
// original's bug 8 panicked on any selector).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "app=api", "app in (a", "metadata.name=db", "metadata.name", "!", "a,,b", "x=\\", "notin (", "=="} {
		f.Add(s, s, s, s)
	}
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		sel, problems := clustersecrets.Parse(clusterSecrets(spec(a, b, c, d)))
		if len(problems) == 0 && (sel.Secrets == nil || sel.SecretFields == nil || sel.Clusters == nil || sel.ClusterFields == nil) {
			t.Fatalf("no problem and no selector: %+v", sel)
		}
	})
}
