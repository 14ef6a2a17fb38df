package docs_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// flagDirs are the packages whose code declares the operator's flags: main
// (main.go, shards.go) and the assembly it calls.
var flagDirs = []string{".", "operator"}

// flagDefiners are the functions of package flag and the methods of
// flag.FlagSet that declare a flag, with the index of the flag's name among
// their arguments.
var flagDefiners = map[string]int{
	"Bool": 0, "BoolFunc": 0, "Duration": 0, "Float64": 0, "Func": 0, "Int": 0,
	"Int64": 0, "String": 0, "Uint": 0, "Uint64": 0,
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1,
	"StringVar": 1, "TextVar": 1, "Uint64Var": 1, "UintVar": 1, "Var": 1,
}

// externalBinders declare, on a flag set, the flags of a library the code
// hands its flag set to, keyed by "<import path>.<type>.<method>".
var externalBinders = map[string]func(*flag.FlagSet){
	"sigs.k8s.io/controller-runtime/pkg/log/zap.Options.BindFlags": func(fs *flag.FlagSet) { (&zap.Options{}).BindFlags(fs) },
}

// codeFlags are the flags the operator's command line declares, each with
// where: the file and line of its declaration, or the library binding it.
func codeFlags(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, dir := range flagDirs {
		paths, err := filepath.Glob(filepath.Join("../..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	ours, fieldTypes := declared(files)
	out := map[string]string{}
	add := func(name, where string) {
		if prev, dup := out[name]; dup {
			t.Errorf("flag --%s is declared twice: %s and %s", name, prev, where)
		}
		out[name] = where
	}
	for _, f := range files {
		imports := importNames(f)
		flagPkg := imports.local("flag")
		sets := flagSets(f, flagPkg)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			pos := strings.TrimPrefix(fset.Position(call.Pos()).String(), "../../")
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && (sets[x.Name] || x.Name == flagPkg) {
					if i, ok := flagDefiners[sel.Sel.Name]; ok && i < len(call.Args) {
						lit, ok := call.Args[i].(*ast.BasicLit)
						name, err := strconv.Unquote(litValue(lit, ok))
						if err != nil {
							t.Errorf("%s: the name of a flag is not a string literal; this test reads only literal names", pos)
							return true
						}
						add(name, pos)
					}
					return true
				}
			}
			if !passesFlagSet(call, sets) {
				return true
			}
			callee, recv := calleeOf(call)
			if ours[callee] {
				return true // its body is among the files read
			}
			key := imports.qualify(fieldTypes[recv]) + "." + callee
			bind, ok := externalBinders[key]
			if !ok {
				t.Errorf("%s: the flag set goes to %s (%s), whose flags this test cannot read: add it to externalBinders", pos, callee, key)
				return true
			}
			lib := flag.NewFlagSet("lib", flag.ContinueOnError)
			bind(lib)
			lib.VisitAll(func(fl *flag.Flag) { add(fl.Name, pos+" via "+key) })
			return true
		})
	}
	return out
}

func litValue(lit *ast.BasicLit, ok bool) string {
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	return lit.Value
}

// declared are the names of the functions, methods and struct fields the
// files declare (a call to one of them runs code that is read here), and
// the type of each struct field, as written.
func declared(files []*ast.File) (map[string]bool, map[string]ast.Expr) {
	ours, fieldTypes := map[string]bool{}, map[string]ast.Expr{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				ours[n.Name.Name] = true
			case *ast.StructType:
				for _, field := range n.Fields.List {
					for _, name := range field.Names {
						ours[name.Name] = true
						fieldTypes[name.Name] = field.Type
					}
				}
			}
			return true
		})
	}
	return ours, fieldTypes
}

// imports maps the local name of each import of a file to its path.
type imports map[string]string

func importNames(f *ast.File) imports {
	out := imports{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out[name] = p
	}
	return out
}

// local is the name the file gives the package of path, or "" when it
// does not import it.
func (im imports) local(path string) string {
	for name, p := range im {
		if p == path {
			return name
		}
	}
	return ""
}

// qualify writes a type expression of the file with its package's import
// path: zap.Options → sigs.k8s.io/controller-runtime/pkg/log/zap.Options.
func (im imports) qualify(typ ast.Expr) string {
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch typ := typ.(type) {
	case *ast.SelectorExpr:
		if pkg, ok := typ.X.(*ast.Ident); ok {
			return im[pkg.Name] + "." + typ.Sel.Name
		}
	case *ast.Ident:
		return typ.Name
	}
	return "?"
}

// flagSets are the names a file gives to *flag.FlagSet values: parameters
// of that type and variables set from flag.NewFlagSet.
func flagSets(f *ast.File, flagPkg string) map[string]bool {
	isFlagSet := func(e ast.Expr) bool {
		star, ok := e.(*ast.StarExpr)
		if !ok {
			return false
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == flagPkg && sel.Sel.Name == "FlagSet"
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if isFlagSet(n.Type) {
				for _, name := range n.Names {
					out[name.Name] = true
				}
			}
		case *ast.AssignStmt:
			for i, rhs := range n.Rhs {
				call, ok := rhs.(*ast.CallExpr)
				if !ok || i >= len(n.Lhs) {
					continue
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "NewFlagSet" {
					if id, ok := n.Lhs[i].(*ast.Ident); ok {
						out[id.Name] = true
					}
				}
			}
		}
		return true
	})
	return out
}

// passesFlagSet says whether call hands one of the flag sets to a function.
func passesFlagSet(call *ast.CallExpr, sets map[string]bool) bool {
	for _, arg := range call.Args {
		if id, ok := arg.(*ast.Ident); ok && sets[id.Name] {
			return true
		}
	}
	return false
}

// calleeOf is the name of the function call calls and, for a method, the
// last name of its receiver (c.zap.BindFlags: "BindFlags", "zap").
func calleeOf(call *ast.CallExpr) (callee, recv string) {
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return fun.Name, ""
	case *ast.SelectorExpr:
		switch x := fun.X.(type) {
		case *ast.Ident:
			recv = x.Name
		case *ast.SelectorExpr:
			recv = x.Sel.Name
		}
		return fun.Sel.Name, recv
	}
	return "?", ""
}

// flagCell finds the flags of a table row's first cell: `--name`.
var flagCell = regexp.MustCompile("`--([a-z0-9][a-z0-9-]*)`")

// documentedFlags are the flags of the table of docs/deploying.md's
// section "## Flags", each with its line.
func documentedFlags(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile("../../docs/deploying.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	in, header := false, true
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Flags"
		case !in || !strings.HasPrefix(line, "|"):
		case header:
			header = false // the first row names the columns
		case strings.HasPrefix(line, "|---"):
		default:
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			names := flagCell.FindAllStringSubmatch(first, -1)
			if len(names) == 0 {
				t.Errorf("docs/deploying.md:%d: a row of the flags table names no `--flag` in its first cell", i+1)
			}
			for _, m := range names {
				if prev, dup := out[m[1]]; dup {
					t.Errorf("docs/deploying.md:%d: --%s is in the flags table twice (line %d too)", i+1, m[1], prev)
				}
				out[m[1]] = i + 1
			}
		}
	}
	return out
}

// TestDeployingDoc_FlagsTableIsTheCommandLine checks that the flags table
// of docs/deploying.md ("## Flags") has a row for every flag the
// operator's command line declares (main.go and the code it hands its
// flag set to, read with go/ast; controller-runtime's zap flags from the
// library itself), and names no flag the command line lacks.
func TestDeployingDoc_FlagsTableIsTheCommandLine(t *testing.T) {
	code, doc := codeFlags(t), documentedFlags(t)
	if len(code) == 0 {
		t.Fatal("found no flag declared in main.go or operator/: this test no longer reads them")
	}
	if len(doc) == 0 {
		t.Fatal("docs/deploying.md has no flags table under \"## Flags\"")
	}
	for _, name := range slices.Sorted(maps.Keys(code)) {
		if _, ok := doc[name]; !ok {
			t.Errorf("flag --%s (%s) is not in the flags table of docs/deploying.md", name, code[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(doc)) {
		if _, ok := code[name]; !ok {
			t.Errorf("docs/deploying.md:%d: the flags table names --%s, which the operator's command line does not declare", doc[name], name)
		}
	}
}
