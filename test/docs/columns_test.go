package docs_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// columns are the printer columns of a kind: those kubectl get shows, and
// those it adds with -o wide (priority above 0).
type columns struct{ shown, wide []string }

// shippedColumns are the additionalPrinterColumns of every version of each
// CRD of config/crd/bases, by kind.
func shippedColumns(t *testing.T) map[string]columns {
	t.Helper()
	paths, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no CRD in config/crd/bases")
	}
	out := map[string]columns{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &crd); err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		cols := out[crd.Spec.Names.Kind]
		for _, v := range crd.Spec.Versions {
			for _, c := range v.AdditionalPrinterColumns {
				list := &cols.shown
				if c.Priority > 0 {
					list = &cols.wide
				}
				if !slices.Contains(*list, c.Name) {
					*list = append(*list, c.Name)
				}
			}
		}
		out[crd.Spec.Names.Kind] = cols
	}
	return out
}

// codeSpans are the `quoted` words of a table cell.
var codeSpans = regexp.MustCompile("`([^`]+)`")

func spans(cell string) []string {
	var out []string
	for _, m := range codeSpans.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// documentedColumns are the rows of the table of docs/api.md's section
// "## Printer columns": the kind, then the columns kubectl get shows, then
// those -o wide adds, each `quoted`; each with its line.
func documentedColumns(t *testing.T) (map[string]columns, map[string]int) {
	t.Helper()
	data, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	out, lines := map[string]columns{}, map[string]int{}
	in, header := false, true
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Printer columns"
		case !in || !strings.HasPrefix(line, "|"):
		case header:
			header = false // the first row names the columns
		case strings.HasPrefix(line, "|---"):
		default:
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) < 3 {
				t.Errorf("docs/api.md:%d: a row of the printer columns table has %d cells, want the kind, the columns and the -o wide columns first", i+1, len(cells))
				continue
			}
			kind := strings.TrimSpace(cells[0])
			if _, dup := out[kind]; dup {
				t.Errorf("docs/api.md:%d: %s is in the printer columns table twice", i+1, kind)
			}
			out[kind] = columns{shown: spans(cells[1]), wide: spans(cells[2])}
			lines[kind] = i + 1
		}
	}
	return out, lines
}

// TestAPIDoc_PrinterColumnsAreTheCRDs checks that the table of docs/api.md's
// section "## Printer columns" has a row for every kind of
// config/crd/bases, naming every printer column of its CRD, in the cell
// of those kubectl get shows or of those -o wide adds as the CRD's
// priority says, and no column the CRD lacks.
func TestAPIDoc_PrinterColumnsAreTheCRDs(t *testing.T) {
	crds := shippedColumns(t)
	doc, lines := documentedColumns(t)
	if len(doc) == 0 {
		t.Fatal("docs/api.md has no printer columns table under \"## Printer columns\"")
	}
	for _, kind := range slices.Sorted(maps.Keys(crds)) {
		want := crds[kind]
		got, ok := doc[kind]
		if !ok {
			t.Errorf("the printer columns table of docs/api.md has no row for %s (columns %s; -o wide %s)", kind,
				strings.Join(want.shown, ", "), strings.Join(want.wide, ", "))
			continue
		}
		for _, check := range []struct {
			each, in []string
			says     string
		}{
			{want.shown, got.shown, "%s's printer column %s is not among the columns kubectl get shows"},
			{want.wide, got.wide, "%s's printer column %s (priority above 0) is not among the columns -o wide adds"},
			{got.shown, want.shown, "%s shows a column %s, which its CRD does not have (or only with -o wide)"},
			{got.wide, want.wide, "%s adds a column %s with -o wide, which its CRD does not have (or shows without)"},
		} {
			for _, c := range check.each {
				if !slices.Contains(check.in, c) {
					t.Errorf("docs/api.md:%d: "+check.says, lines[kind], kind, c)
				}
			}
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(lines)) {
		if _, ok := crds[kind]; !ok {
			t.Errorf("docs/api.md:%d: the printer columns table names %s, which is not a kind of config/crd/bases", lines[kind], kind)
		}
	}
}
