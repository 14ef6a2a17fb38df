package docs_test

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/medium/picchu"

// The layout section of docs/development.md holds two fenced blocks the
// tests read: "wings" (a wing and its packages per line) and "imports" (a
// wing and the wings its packages import). The picture people read is
// held to the code: every production package is in a wing, and the
// imports between wings are exactly those the code makes.

// wings reads the "wings" block: package directory → wing, and the wings
// in the order written.
func wings(t *testing.T, doc []string) (map[string]string, []string) {
	t.Helper()
	of := map[string]string{}
	var order []string
	for _, line := range block(t, doc, "wings") {
		wing, pkgs, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("docs/development.md, wings: %q is not \"wing: packages\"", line)
		}
		wing = strings.TrimSpace(wing)
		order = append(order, wing)
		for _, p := range strings.Split(pkgs, ",") {
			p = strings.TrimSpace(p)
			if w, dup := of[p]; dup {
				t.Errorf("docs/development.md, wings: %s is in %s and %s", p, w, wing)
			}
			of[p] = wing
		}
	}
	return of, order
}

// documentedImports reads the "imports" block: wing → the wings it imports.
func documentedImports(t *testing.T, doc []string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, line := range block(t, doc, "imports") {
		from, to, ok := strings.Cut(line, "→")
		if !ok {
			t.Fatalf("docs/development.md, imports: %q is not \"wing → wings\"", line)
		}
		var targets []string
		for _, w := range strings.Split(to, ",") {
			if w = strings.TrimSpace(w); w != "" && w != "nothing of ours" {
				targets = append(targets, w)
			}
		}
		slices.Sort(targets)
		out[strings.TrimSpace(from)] = targets
	}
	return out
}

// block returns the non-empty lines of the fenced block tagged tag.
func block(t *testing.T, doc []string, tag string) []string {
	t.Helper()
	var out []string
	in, found := false, false
	for _, line := range doc {
		switch {
		case !in && strings.TrimSpace(line) == "```"+tag:
			in, found = true, true
		case in && strings.TrimSpace(line) == "```":
			in = false
		case in && strings.TrimSpace(line) != "":
			out = append(out, line)
		}
	}
	if !found {
		t.Fatalf("docs/development.md has no ```%s block", tag)
	}
	return out
}

// productionImports maps each production package directory (relative, "."
// for the root) to the directories of ours its non-test files import.
// test/ and hack/ are not production code.
func productionImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == "test" || rel == "hack" || rel == "bin" || rel == "config" || rel == "docs" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if filepath.Ext(path) != ".go" || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("reading the imports of %s: %w", rel, err)
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p == module {
				out[dir] = append(out[dir], ".")
			} else if rest, ok := strings.CutPrefix(p, module+"/"); ok {
				out[dir] = append(out[dir], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readDoc(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestLayout_EveryPackageHasAWing holds the wings of docs/development.md
// to the tree: each production package is in exactly one wing, and each
// package the doc names exists.
func TestLayout_EveryPackageHasAWing(t *testing.T) {
	wingOf, _ := wings(t, readDoc(t))
	imports := productionImports(t, "../..")
	for _, dir := range slices.Sorted(maps.Keys(imports)) {
		if _, ok := wingOf[dir]; !ok {
			t.Errorf("package %s is in no wing of docs/development.md", dir)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(wingOf)) {
		if _, ok := imports[dir]; !ok {
			t.Errorf("docs/development.md names package %s, which is not in the tree", dir)
		}
	}
}

// TestLayout_ImportsBetweenWings holds the imports block of
// docs/development.md to the code: the wings each wing imports are
// exactly those its packages import, no more and no fewer.
func TestLayout_ImportsBetweenWings(t *testing.T) {
	doc := readDoc(t)
	wingOf, order := wings(t, doc)
	documented := documentedImports(t, doc)
	actual := map[string][]string{}
	for dir, deps := range productionImports(t, "../..") {
		from, ok := wingOf[dir]
		if !ok {
			continue // TestLayout_EveryPackageHasAWing says so
		}
		for _, dep := range deps {
			if to := wingOf[dep]; to != "" && to != from && !slices.Contains(actual[from], to) {
				actual[from] = append(actual[from], to)
			}
		}
	}
	for _, wing := range order {
		got := actual[wing]
		slices.Sort(got)
		if !slices.Equal(got, documented[wing]) {
			t.Errorf("docs/development.md says %s → %s; its packages import %s", wing,
				orNothing(documented[wing]), orNothing(got))
		}
	}
}

func orNothing(wings []string) string {
	if len(wings) == 0 {
		return "nothing of ours"
	}
	return strings.Join(wings, ", ")
}

// TestLayout_PathNamesPackages holds the "path" block of
// docs/development.md to the tree: every package path it names exists.
func TestLayout_PathNamesPackages(t *testing.T) {
	for _, line := range block(t, readDoc(t), "path") {
		for _, word := range strings.Fields(line) {
			word = strings.Trim(word, ",.;:()")
			if !strings.Contains(word, "/") || strings.ContainsAny(word, "<>") {
				continue
			}
			if info, err := os.Stat(filepath.Join("../..", word)); err != nil || !info.IsDir() {
				t.Errorf("docs/development.md, path: %s is not a package of the tree", word)
			}
		}
	}
}
