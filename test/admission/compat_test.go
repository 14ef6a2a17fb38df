package admission_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/medium/picchu/test/harness"
)

// referenceCRDDir holds the original operator's CRDs, beside the repository.
func referenceCRDDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PICCHU_REFERENCE_CRDS")
	if dir == "" {
		dir = filepath.Join(harness.RepoRoot(), "..", "shared", "reference", "picchu-crds")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("reference CRDs not found (set PICCHU_REFERENCE_CRDS): %v", err)
	}
	return dir
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

// schemaPaths lists every field path of a schema: ".spec.targets[].name",
// maps as "{}".
func schemaPaths(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]fieldType) {
	out[path] = fieldType{Type: s.Type, IntOrString: s.XIntOrString, Format: s.Format}
	for name, child := range s.Properties {
		schemaPaths(&child, path+"."+name, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		schemaPaths(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		schemaPaths(s.AdditionalProperties.Schema, path+"{}", out)
	}
}

// TestCRDs_AcceptEveryReferenceFieldPath checks that every field path of the
// original operator's CRDs (outside status) is in ours with the same type, so
// every manifest written for it is accepted and nothing in it is pruned.
func TestCRDs_AcceptEveryReferenceFieldPath(t *testing.T) {
	refDir := referenceCRDDir(t)
	files, err := filepath.Glob(filepath.Join(refDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no reference CRDs in %s: %v", refDir, err)
	}
	for _, refFile := range files {
		name := filepath.Base(refFile)
		t.Run(name, func(t *testing.T) {
			ref := loadCRD(t, refFile)
			ours := loadCRD(t, filepath.Join(harness.RepoRoot(), "config", "crd", "bases", name))
			if ref.Spec.Names.Kind != ours.Spec.Names.Kind || ref.Spec.Group != ours.Spec.Group ||
				ref.Spec.Names.Plural != ours.Spec.Names.Plural || ref.Spec.Scope != ours.Spec.Scope {
				t.Fatalf("names differ: reference %s %s/%s %s, ours %s %s/%s %s",
					ref.Spec.Names.Kind, ref.Spec.Group, ref.Spec.Names.Plural, ref.Spec.Scope,
					ours.Spec.Names.Kind, ours.Spec.Group, ours.Spec.Names.Plural, ours.Spec.Scope)
			}
			refPaths, ourPaths := map[string]fieldType{}, map[string]fieldType{}
			for _, v := range ref.Spec.Versions {
				schemaPaths(v.Schema.OpenAPIV3Schema, "", refPaths)
			}
			found := false
			for _, v := range ours.Spec.Versions {
				if v.Name == "v1alpha1" && v.Served && v.Storage {
					schemaPaths(v.Schema.OpenAPIV3Schema, "", ourPaths)
					found = true
				}
			}
			if !found {
				t.Fatalf("our CRD has no served storage version v1alpha1")
			}
			var paths []string
			for p := range refPaths {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			checked := 0
			for _, p := range paths {
				if p == ".status" || strings.HasPrefix(p, ".status.") {
					continue
				}
				checked++
				want := refPaths[p]
				got, ok := ourPaths[p]
				switch {
				case !ok:
					t.Errorf("%s: missing from our CRD (reference type %+v)", p, want)
				case got != want:
					t.Errorf("%s: type %+v, reference %+v", p, got, want)
				}
			}
			if checked < 5 {
				t.Fatalf("only %d field paths checked: the reference CRD was not read", checked)
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
	files, err := filepath.Glob(filepath.Join(harness.RepoRoot(), "config", "crd", "bases", "*.yaml"))
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
