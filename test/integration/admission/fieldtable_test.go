package admission_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/medium/picchu/test/kit"
)

// fieldTableHeading heads the table of docs/api.md that says what Picchu
// does with every field of the original's API.
const fieldTableHeading = "## Every field of the original's API"

// fieldEntry is a field path a row of that table names, for one kind
// ("all": every kind), alone or with everything under it ("and below").
type fieldEntry struct {
	line          int
	kind, path    string
	below         bool
	picchu, notes string
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// fieldTable reads the entries of the table from docs/api.md.
func fieldTable(t *testing.T) []fieldEntry {
	t.Helper()
	path := filepath.Join(kit.RepoRoot(), "docs", "api.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []fieldEntry
	in := false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case line == fieldTableHeading:
			in = true
			continue
		case in && strings.HasPrefix(line, "## "):
			in = false
		}
		if !in || !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| kind ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("docs/api.md:%d: want 4 cells (kind, field, Picchu, what it does), got %d: %s", i+1, len(cells), line)
		}
		// The field cell is a list of paths, each followed by "and below"
		// when it covers what is under it.
		for _, part := range strings.Split(cells[1], ", ") {
			m := codeSpan.FindStringSubmatch(part)
			if m == nil {
				t.Fatalf("docs/api.md:%d: %q names no field", i+1, part)
			}
			entries = append(entries, fieldEntry{
				line: i + 1, kind: cells[0], path: m[1], below: strings.HasSuffix(part, " and below"),
				picchu: cells[2], notes: cells[3],
			})
		}
	}
	if len(entries) < 50 {
		t.Fatalf("docs/api.md: found %d field paths under %q: the table was not read", len(entries), fieldTableHeading)
	}
	return entries
}

// covers says whether the entry accounts for the reference path p: p is
// the entry's path, under it (when "and below"), an item or value of it
// (".ports[]", ".podAnnotations{}"), or an object above it.
func (e fieldEntry) covers(p string) bool {
	switch {
	case p == e.path, e.below && under(p, e.path), under(e.path, p):
		return true
	}
	for {
		item, ok := strings.CutSuffix(p, "[]")
		if !ok {
			item, ok = strings.CutSuffix(p, "{}")
		}
		if !ok {
			return false
		}
		if p = item; p == e.path {
			return true
		}
	}
}

// under says whether path p is strictly under path parent.
func under(p, parent string) bool {
	rest, ok := strings.CutPrefix(p, parent)
	return ok && rest != "" && strings.ContainsAny(rest[:1], ".[{")
}

// TestAPIDoc_ListsEveryReferenceField checks the table of docs/api.md
// that says what Picchu does with each field of the original's API against
// the original's field list: every field path of every kind is accounted
// for, every path the table names is one of the original's, and each says
// honoured, honoured differently or ignored, and why.
func TestAPIDoc_ListsEveryReferenceField(t *testing.T) {
	entries := fieldTable(t)
	crds := reference(t)
	fields := map[string]map[string]bool{}
	for _, crd := range crds {
		fields[crd.Kind] = map[string]bool{}
		for _, f := range crd.Fields {
			fields[crd.Kind][f.Path] = true
		}
	}
	for _, e := range entries {
		switch e.picchu {
		case "honoured", "honoured differently", "ignored":
		default:
			t.Errorf("docs/api.md:%d: %s: Picchu %q; want honoured, honoured differently or ignored", e.line, e.path, e.picchu)
		}
		if strings.TrimSpace(e.notes) == "" {
			t.Errorf("docs/api.md:%d: %s: says nothing of what Picchu does with it", e.line, e.path)
		}
		if e.kind != "all" && fields[e.kind] == nil {
			t.Errorf("docs/api.md:%d: no kind %q in the original's API", e.line, e.kind)
			continue
		}
		for kind, paths := range fields {
			if (e.kind == "all" || e.kind == kind) && !paths[e.path] {
				t.Errorf("docs/api.md:%d: %s has no field %s in the original's API", e.line, kind, e.path)
			}
		}
	}
	missing := 0
	for _, crd := range crds {
		for _, f := range crd.Fields {
			covered := false
			for _, e := range entries {
				if (e.kind == "all" || e.kind == crd.Kind) && e.covers(f.Path) {
					covered = true
					break
				}
			}
			if !covered {
				missing++
				t.Errorf("%s %s: not in docs/api.md's table %q", crd.Kind, f.Path, fieldTableHeading)
			}
		}
	}
	if missing == 0 {
		n := 0
		for _, crd := range crds {
			n += len(crd.Fields)
		}
		t.Logf("%d field paths of the original's %d kinds accounted for by %d table entries", n, len(crds), len(entries))
	}
}
