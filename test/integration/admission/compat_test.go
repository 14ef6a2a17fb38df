package admission_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/medium/picchu/test/crdfields"
	"github.com/medium/picchu/test/kit"
)

// referenceFields is where the original operator's field paths and their
// types are kept (written by hack/reference-fields from its CRDs).
var referenceFields = filepath.Join("testdata", "reference-fields.txt")

// reference returns the original operator's CRDs: their names and every
// field path outside status with its type.
func reference(t *testing.T) []crdfields.CRD {
	t.Helper()
	f, err := os.Open(referenceFields)
	if err != nil {
		t.Fatalf("reading the original's field paths: %v", err)
	}
	defer f.Close()
	crds, err := crdfields.Read(f)
	if err != nil {
		t.Fatalf("%s: %v", referenceFields, err)
	}
	if len(crds) != 6 {
		t.Fatalf("%s: want the original's 6 kinds, found %d", referenceFields, len(crds))
	}
	return crds
}

// ours loads our CRD of the reference's kind from config/crd/bases.
func ours(t *testing.T, ref crdfields.CRD) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	return loadCRD(t, filepath.Join(kit.RepoRoot(), "config", "crd", "bases", ref.Group+"_"+ref.Plural+".yaml"))
}

func loadCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return crd
}

// fieldType is what must match for a field path: its JSON type, whether it is
// int-or-string, and its format.
type fieldType struct {
	Type        string
	IntOrString bool
	Format      string
}

func typeOf(f crdfields.Field) fieldType {
	return fieldType{Type: f.Type, IntOrString: f.IntOrString, Format: f.Format}
}

// TestCRDs_AcceptEveryReferenceFieldPath checks that every field path of the
// original operator's CRDs (outside status) is in ours with the same type, so
// every manifest written for it is accepted and nothing in it is pruned.
func TestCRDs_AcceptEveryReferenceFieldPath(t *testing.T) {
	for _, ref := range reference(t) {
		t.Run(ref.Kind, func(t *testing.T) {
			crd := ours(t, ref)
			if ref.Kind != crd.Spec.Names.Kind || ref.Group != crd.Spec.Group ||
				ref.Plural != crd.Spec.Names.Plural || ref.Scope != string(crd.Spec.Scope) {
				t.Fatalf("names differ: reference %s %s/%s %s, ours %s %s/%s %s",
					ref.Kind, ref.Group, ref.Plural, ref.Scope,
					crd.Spec.Names.Kind, crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Scope)
			}
			if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
				return v.Name == "v1alpha1" && v.Served && v.Storage
			}) {
				t.Fatalf("our CRD has no served storage version v1alpha1")
			}
			got, err := crdfields.FromCRD(crd)
			if err != nil {
				t.Fatalf("listing our field paths: %v", err)
			}
			checked := 0
			for _, want := range ref.Fields {
				checked++
				have, ok := got.Field(want.Path)
				switch {
				case !ok:
					t.Errorf("%s: missing from our CRD (reference type %+v)", want.Path, typeOf(want))
				case typeOf(have) != typeOf(want):
					t.Errorf("%s: type %+v, reference %+v", want.Path, typeOf(have), typeOf(want))
				}
			}
			if checked < 5 {
				t.Fatalf("only %d field paths checked: the reference was not read", checked)
			}
			t.Logf("%d reference field paths present with the same type", checked)
		})
	}
}

// keda's own types (embedded in scale.kedaWorker) document few of their fields.
var undocumentedUpstream = []string{
	".spec.targets[].scale.kedaWorker.advanced.",
	".spec.targets[].scale.kedaWorker.fallback.",
	".spec.targets[].scale.kedaWorker.triggers[].",
}

// TestCRDs_EveryFieldDocumented checks that every field of our CRDs has a
// description for kubectl explain, except inside KEDA's embedded types.
func TestCRDs_EveryFieldDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(kit.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) != 6 {
		t.Fatalf("want our 6 CRDs, found %d: %v", len(files), err)
	}
	for _, f := range files {
		crd := loadCRD(t, f)
		var walk func(s *apiextensionsv1.JSONSchemaProps, path string)
		walk = func(s *apiextensionsv1.JSONSchemaProps, path string) {
			for name, child := range s.Properties {
				p := path + "." + name
				if child.Description == "" && p != ".apiVersion" && p != ".kind" && p != ".metadata" && !upstream(p) {
					t.Errorf("%s: %s has no description", crd.Spec.Names.Kind, p)
				}
				walk(&child, p)
			}
			if s.Items != nil && s.Items.Schema != nil {
				walk(s.Items.Schema, path+"[]")
			}
		}
		walk(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "")
	}
}

func upstream(path string) bool {
	for _, prefix := range undocumentedUpstream {
		if strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}
