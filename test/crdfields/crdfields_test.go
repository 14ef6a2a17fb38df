package crdfields_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/medium/picchu/test/crdfields"
	"github.com/medium/picchu/test/kit"
)

// ourCRDs lists the field paths of our own CRDs: real schemas, with maps,
// arrays of objects, int-or-strings, formats and preserved unknown fields.
func ourCRDs(t *testing.T) []crdfields.CRD {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kit.RepoRoot(), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs under config/crd/bases: %v", err)
	}
	var out []crdfields.CRD
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		c, err := crdfields.FromCRD(crd)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, c)
	}
	return out
}

// TestRoundTrip checks that writing, reading and rebuilding the schema of
// real CRDs keeps every path with its type, and that what Read returns is
// what was written.
func TestRoundTrip(t *testing.T) {
	crds := ourCRDs(t)
	var b bytes.Buffer
	if err := crdfields.Write(&b, []string{"a header"}, crds); err != nil {
		t.Fatal(err)
	}
	read, err := crdfields.Read(&b)
	if err != nil {
		t.Fatalf("reading what Write wrote: %v", err)
	}
	if !reflect.DeepEqual(read, crds) {
		t.Fatalf("Read(Write(crds)) differs from crds")
	}
	kinds := map[string]bool{}
	for _, c := range read {
		kinds[c.Kind] = true
		schema, err := c.Schema()
		if err != nil {
			t.Fatalf("%s: rebuilding the schema: %v", c.Kind, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Names.Kind = c.Kind
		crd.Spec.Group, crd.Spec.Names.Plural, crd.Spec.Scope = c.Group, c.Plural, apiextensionsv1.ResourceScope(c.Scope)
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1alpha1", Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
		}}
		again, err := crdfields.FromCRD(crd)
		if err != nil {
			t.Fatalf("%s: listing the rebuilt schema: %v", c.Kind, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Errorf("%s: the rebuilt schema lists other fields than the original", c.Kind)
		}
		if _, ok := c.Field(".spec"); !ok {
			t.Errorf("%s: Field(.spec) not found", c.Kind)
		}
		for _, f := range c.Fields {
			if f.Path == ".status" || strings.HasPrefix(f.Path, ".status.") {
				t.Errorf("%s: status path %s listed", c.Kind, f.Path)
			}
		}
	}
	if !kinds["Revision"] || !kinds["ReleaseManager"] {
		t.Fatalf("kinds read: %v", kinds)
	}
}

func TestReadErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"crd Revision picchu.medium.engineering revisions\n", "line 1"},
		{"# c\n.spec object\n", "line 2: a field before any crd line"},
		{"crd A g p Namespaced\n.spec object nonsense\n", `line 2: unknown flag "nonsense"`},
		{"crd A g p Namespaced\nspec object\n", "line 2"},
	} {
		_, err := crdfields.Read(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Read(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

func TestSchemaNeedsParents(t *testing.T) {
	c := crdfields.CRD{Kind: "A", Fields: []crdfields.Field{{Path: ".spec.a", Type: "string"}}}
	if _, err := c.Schema(); err == nil || !strings.Contains(err.Error(), `no parent ".spec"`) {
		t.Fatalf("Schema() = %v, want a missing parent named", err)
	}
}
