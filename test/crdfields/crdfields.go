// Package crdfields lists the field paths of CustomResourceDefinitions with
// their types, in a text form of one field per line, and rebuilds a schema
// from such a list. It keeps the facts of an interface that tests check
// against (every field path of the original Picchu's CRDs and its type) in
// the repository, without the CRDs themselves.
//
// The form, as Write writes it and Read reads it:
//
//	# comment
//	crd <Kind> <group> <plural> <scope>
//	<path> <type> [format=<format>] [int-or-string] [preserve-unknown-fields]
//
// A path is ".spec.targets[].name": a property is ".name", the items of an
// array "[]", the values of a map "{}". A type is the schema's JSON type, or
// "-" when it has none (an int-or-string). Fields follow the crd line of
// their kind, sorted by path. The status subtree is left out: it is what the
// operator writes, not what users apply.
package crdfields

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Field is one field path of a schema and what its values must be.
type Field struct {
	// Path is the field's path, such as ".spec.targets[].ports[].port".
	Path string
	// Type is the JSON type ("string", "integer", "object", ...), empty for
	// an int-or-string.
	Type string
	// Format is the schema's format ("int32", "date-time", ...), if any.
	Format string
	// IntOrString is true for x-kubernetes-int-or-string fields.
	IntOrString bool
	// PreserveUnknownFields is true for x-kubernetes-preserve-unknown-fields.
	PreserveUnknownFields bool
}

// CRD is a kind's names and its field paths, sorted.
type CRD struct {
	Kind, Group, Plural, Scope string
	Fields                     []Field
}

// FromCRD lists the field paths of every version of crd, status left out.
// Two versions that give one path different types are an error.
func FromCRD(crd *apiextensionsv1.CustomResourceDefinition) (CRD, error) {
	out := CRD{Kind: crd.Spec.Names.Kind, Group: crd.Spec.Group, Plural: crd.Spec.Names.Plural, Scope: string(crd.Spec.Scope)}
	seen := map[string]Field{}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		fields, err := walk(v.Schema.OpenAPIV3Schema, "", nil)
		if err != nil {
			return CRD{}, fmt.Errorf("%s version %s: %w", out.Kind, v.Name, err)
		}
		for _, f := range fields {
			if prev, ok := seen[f.Path]; ok && prev != f {
				return CRD{}, fmt.Errorf("%s: %s is %+v in one version and %+v in another", out.Kind, f.Path, prev, f)
			}
			seen[f.Path] = f
		}
	}
	for _, f := range seen {
		out.Fields = append(out.Fields, f)
	}
	slices.SortFunc(out.Fields, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func walk(s *apiextensionsv1.JSONSchemaProps, path string, out []Field) ([]Field, error) {
	if path == ".status" {
		return out, nil
	}
	if path != "" {
		out = append(out, Field{
			Path: path, Type: s.Type, Format: s.Format, IntOrString: s.XIntOrString,
			PreserveUnknownFields: s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields,
		})
	}
	var err error
	for name, child := range s.Properties {
		if name == "" || strings.ContainsAny(name, ".[]{} \t") {
			return nil, fmt.Errorf("%s: property name %q cannot be written as a path", path, name)
		}
		if out, err = walk(&child, path+"."+name, out); err != nil {
			return nil, err
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		if out, err = walk(s.Items.Schema, path+"[]", out); err != nil {
			return nil, err
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		if out, err = walk(s.AdditionalProperties.Schema, path+"{}", out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Write writes crds in the line form, after a header of comment lines.
func Write(w io.Writer, header []string, crds []CRD) error {
	bw := bufio.NewWriter(w)
	for _, h := range header {
		fmt.Fprintf(bw, "# %s\n", h)
	}
	for _, c := range crds {
		fmt.Fprintf(bw, "crd %s %s %s %s\n", c.Kind, c.Group, c.Plural, c.Scope)
		for _, f := range c.Fields {
			typ := f.Type
			if typ == "" {
				typ = "-"
			}
			line := f.Path + " " + typ
			if f.Format != "" {
				line += " format=" + f.Format
			}
			if f.IntOrString {
				line += " int-or-string"
			}
			if f.PreserveUnknownFields {
				line += " preserve-unknown-fields"
			}
			fmt.Fprintln(bw, line)
		}
	}
	return bw.Flush()
}

// Read reads the line form. Errors name the line.
func Read(r io.Reader) ([]CRD, error) {
	var crds []CRD
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		words := strings.Fields(line)
		if words[0] == "crd" {
			if len(words) != 5 {
				return nil, fmt.Errorf("line %d: want \"crd <Kind> <group> <plural> <scope>\", got %q", n, line)
			}
			crds = append(crds, CRD{Kind: words[1], Group: words[2], Plural: words[3], Scope: words[4]})
			continue
		}
		if len(crds) == 0 {
			return nil, fmt.Errorf("line %d: a field before any crd line", n)
		}
		if len(words) < 2 || !strings.HasPrefix(words[0], ".") {
			return nil, fmt.Errorf("line %d: want \"<path> <type> [flags]\", got %q", n, line)
		}
		f := Field{Path: words[0], Type: words[1]}
		if f.Type == "-" {
			f.Type = ""
		}
		for _, flag := range words[2:] {
			switch {
			case strings.HasPrefix(flag, "format="):
				f.Format = strings.TrimPrefix(flag, "format=")
			case flag == "int-or-string":
				f.IntOrString = true
			case flag == "preserve-unknown-fields":
				f.PreserveUnknownFields = true
			default:
				return nil, fmt.Errorf("line %d: unknown flag %q", n, flag)
			}
		}
		c := &crds[len(crds)-1]
		c.Fields = append(c.Fields, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading field paths: %w", err)
	}
	for _, c := range crds {
		slices.SortFunc(c.Fields, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
	}
	return crds, nil
}

// Field returns the field at path, if c has it.
func (c CRD) Field(path string) (Field, bool) {
	i, ok := slices.BinarySearchFunc(c.Fields, path, func(f Field, p string) int { return strings.Compare(f.Path, p) })
	if !ok {
		return Field{}, false
	}
	return c.Fields[i], true
}

// Schema rebuilds the schema the fields describe: the same paths with the
// same types, formats and extensions, and nothing else (no descriptions,
// defaults or validations). A path whose parent is missing is an error.
func (c CRD) Schema() (*apiextensionsv1.JSONSchemaProps, error) {
	root := &node{schema: apiextensionsv1.JSONSchemaProps{Type: "object"}}
	nodes := map[string]*node{"": root}
	// A parent's path is a prefix of its children's: shorter paths first.
	fields := slices.Clone(c.Fields)
	slices.SortFunc(fields, func(a, b Field) int { return len(a.Path) - len(b.Path) })
	for _, f := range fields {
		parentPath, step := split(f.Path)
		parent, ok := nodes[parentPath]
		if !ok {
			return nil, fmt.Errorf("%s: %s has no parent %q", c.Kind, f.Path, parentPath)
		}
		n := &node{schema: apiextensionsv1.JSONSchemaProps{Type: f.Type, Format: f.Format, XIntOrString: f.IntOrString}}
		if f.PreserveUnknownFields {
			yes := true
			n.schema.XPreserveUnknownFields = &yes
		}
		switch step {
		case "[]":
			parent.items = n
		case "{}":
			parent.values = n
		default:
			if parent.props == nil {
				parent.props = map[string]*node{}
			}
			parent.props[step] = n
		}
		nodes[f.Path] = n
	}
	s := root.build()
	return &s, nil
}

// split cuts the last step off a path: ".a.b[]" is ".a.b" and "[]".
func split(path string) (parent, step string) {
	switch {
	case strings.HasSuffix(path, "[]"), strings.HasSuffix(path, "{}"):
		return path[:len(path)-2], path[len(path)-2:]
	}
	i := strings.LastIndexByte(path, '.')
	return path[:i], path[i+1:]
}

type node struct {
	schema        apiextensionsv1.JSONSchemaProps
	props         map[string]*node
	items, values *node
}

func (n *node) build() apiextensionsv1.JSONSchemaProps {
	s := n.schema
	if len(n.props) > 0 {
		s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
		for name, child := range n.props {
			s.Properties[name] = child.build()
		}
	}
	if n.items != nil {
		item := n.items.build()
		s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}
	}
	if n.values != nil {
		value := n.values.build()
		s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
	}
	return s
}
