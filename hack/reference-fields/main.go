// Command reference-fields writes the field paths of the original Picchu's
// CRDs, with their types, to test/integration/admission/testdata/reference-fields.txt
// (see package test/crdfields for the form). The compatibility tests of
// test/integration/admission check our CRDs against that file, so that they need
// nothing outside the repository. Run it again only when the reference
// CRDs change, from the root of the repository:
//
//	go run ./hack/reference-fields [-crds DIR] [-out FILE]
//
// By default it reads ../shared/reference/picchu-crds, where the original's
// CRDs sit beside this repository on the project's own machines; a user's
// clone has no such folder, and needs none.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/medium/picchu/test/crdfields"
)

func main() {
	crdDir := flag.String("crds", filepath.Join("..", "shared", "reference", "picchu-crds"), "directory of the original's CRD files")
	out := flag.String("out", filepath.Join("test", "integration", "admission", "testdata", "reference-fields.txt"), "file to write")
	flag.Parse()
	if err := run(*crdDir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "reference-fields:", err)
		os.Exit(1)
	}
}

func run(crdDir, out string) error {
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRD files in %s", crdDir)
	}
	sort.Strings(files)
	var crds []crdfields.CRD
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("decoding %s: %w", file, err)
		}
		c, err := crdfields.FromCRD(crd)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		crds = append(crds, c)
	}
	var b bytes.Buffer
	header := []string{
		"Every field path of the original Picchu's CRDs (status left out) and its type: what our CRDs must accept.",
		"Written by `go run ./hack/reference-fields` from the original's CRD files; do not edit. Form: package test/crdfields.",
	}
	if err := crdfields.Write(&b, header, crds); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fields := 0
	for _, c := range crds {
		fields += len(c.Fields)
	}
	fmt.Printf("reference-fields: wrote %d kinds, %d field paths to %s\n", len(crds), fields, out)
	return nil
}
