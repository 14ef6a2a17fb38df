package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// makeRule is a rule of the Makefile: "target:", not "VAR := value".
var makeRule = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:([^=]|$)`)

// makeTargets are the targets the Makefile's rules name.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if m := makeRule.FindStringSubmatch(line); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// named is a make target a document names, and where.
type named struct {
	target, where string
}

// makeWords are the targets of a make command line: its words after make,
// up to a comment or a pipe, without variables (APPS=100) and options.
func makeWords(command string) []string {
	words := strings.Fields(command)
	if len(words) == 0 || words[0] != "make" {
		return nil
	}
	var out []string
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "#") || strings.ContainsAny(w[:1], "|;&><") {
			break
		}
		if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") {
			out = append(out, w)
		}
	}
	return out
}

// inlineCode finds `code spans`, across line breaks.
var inlineCode = regexp.MustCompile("`([^`]+)`")

// namedTargets are the make targets a Markdown file names: in every
// `make …` code span and every line of a fenced block that starts with
// make, and, in its section "## Make targets", every code span that is not
// a path (its first word: `bench-fleet APPS=100`).
func namedTargets(t *testing.T, path string) []named {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(path, "../../")
	lines := strings.Split(string(data), "\n")
	var out []named
	// Fenced blocks: their make lines, then blanked, so that the code
	// spans below are read from the prose alone.
	fenced := false
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			fenced = !fenced
			lines[i] = ""
		case fenced:
			for _, w := range makeWords(trimmed) {
				out = append(out, named{w, name + ":" + strconv.Itoa(i+1)})
			}
			lines[i] = ""
		}
	}
	// Sections: each with its first line, so a span's line can be told.
	section := ""
	start := 0
	flush := func(end int) {
		text := strings.Join(lines[start:end], "\n")
		for _, m := range inlineCode.FindAllStringSubmatchIndex(text, -1) {
			code := strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
			where := name + ":" + strconv.Itoa(start+1+strings.Count(text[:m[0]], "\n"))
			words := makeWords(code)
			if words == nil && section == "## Make targets" && code != "" && !strings.Contains(code, "/") {
				words = strings.Fields(code)[:1]
			}
			for _, w := range words {
				out = append(out, named{w, where})
			}
		}
	}
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") {
			flush(i)
			section, start = line, i
		}
	}
	flush(len(lines))
	return out
}

// TestReadme_MakeTargetsExist checks that every make target README.md and
// docs/*.md name (`make demo`, a make line of a shell block, and each
// target listed in the README's "## Make targets") is a target of the
// Makefile.
func TestReadme_MakeTargetsExist(t *testing.T) {
	targets := makeTargets(t)
	if !targets["test"] {
		t.Fatal("read no target \"test\" from the Makefile: this test no longer reads its rules")
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := namedTargets(t, "../../README.md")
	if len(readme) == 0 {
		t.Fatal("README.md names no make target: this test no longer reads them")
	}
	all := readme
	for _, d := range docs {
		all = append(all, namedTargets(t, d)...)
	}
	for _, n := range all {
		if !targets[n.target] {
			t.Errorf("%s names make target %q, which the Makefile does not have", n.where, n.target)
		}
	}
}
