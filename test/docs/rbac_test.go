package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// grant is one verb on one resource (of one name, or any) of an API group,
// cluster-wide or in the operator's namespace.
type grant struct {
	where, group, resource, name, verb string
}

func (g grant) String() string {
	name := ""
	if g.name != "" {
		name = " named " + g.name
	}
	group := g.group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("%s: %s %s%s %s", g.where, group, g.resource, name, g.verb)
}

// shipped are the grants of config/rbac/role.yaml: its ClusterRole's rules
// are "cluster", its Role's "operator's namespace".
func shipped(t *testing.T) []grant {
	t.Helper()
	data, err := os.ReadFile("../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []grant
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(bytes.Trim(doc, "-"))) == 0 {
			continue
		}
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(doc, &role); err != nil {
			t.Fatalf("reading config/rbac/role.yaml: %v", err)
		}
		where := map[string]string{"ClusterRole": "cluster", "Role": "operator's namespace"}[role.Kind]
		if where == "" {
			t.Fatalf("config/rbac/role.yaml holds a %q", role.Kind)
		}
		for _, r := range role.Rules {
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						for _, v := range r.Verbs {
							out = append(out, grant{where, g, res, n, v})
						}
					}
				}
			}
		}
	}
	return out
}

// documented are the grants of the table of docs/security.md's section
// "The operator on the delivery cluster".
func documented(t *testing.T) []grant {
	t.Helper()
	f, err := os.Open("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []grant
	in, table := false, false
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## The operator on the delivery cluster"
		case !in:
		case strings.HasPrefix(line, "| where |"):
			table = true
		case table && strings.HasPrefix(line, "|---"):
		case table && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 6 {
				t.Fatalf("docs/security.md: row %q has %d cells, want 6", line, len(cells))
			}
			where := strings.TrimSpace(cells[0])
			group := strings.Trim(strings.TrimSpace(cells[1]), "`")
			if group == "core" {
				group = ""
			}
			name := strings.Trim(strings.TrimSpace(cells[3]), "`")
			for _, res := range list(cells[2]) {
				for _, v := range list(cells[4]) {
					out = append(out, grant{where, group, res, name, v})
				}
			}
		case table:
			table = false
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// list splits a cell of comma-separated, possibly quoted, words.
func list(cell string) []string {
	var out []string
	for w := range strings.SplitSeq(cell, ",") {
		if w = strings.Trim(strings.TrimSpace(w), "`"); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// TestSecurityDoc_RBACTableIsTheShippedRole checks that the table of the
// operator's permissions in docs/security.md lists exactly the grants of
// config/rbac/role.yaml: none missing, none the role does not hold.
func TestSecurityDoc_RBACTableIsTheShippedRole(t *testing.T) {
	role, doc := shipped(t), documented(t)
	if len(doc) == 0 {
		t.Fatal("docs/security.md has no permissions table under \"## The operator on the delivery cluster\"")
	}
	for _, g := range role {
		if !slices.Contains(doc, g) {
			t.Errorf("config/rbac/role.yaml grants %s; docs/security.md does not list it", g)
		}
	}
	for _, g := range doc {
		if !slices.Contains(role, g) {
			t.Errorf("docs/security.md lists %s; config/rbac/role.yaml does not grant it", g)
		}
	}
}
