package vm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// kernelTestNames returns the top-level tests in dir's _test.go files that reach the
// kernel: those whose body refers, directly or through functions and variables of the
// same package's test files, to kerneltest or to one of the helper packages built on it.
// The match is by name within the package, so it errs towards including a test.
func kernelTestNames(dir string, kernelImports map[string]bool) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	type decl struct {
		direct bool
		refs   map[string]bool
	}
	decls := map[string]*decl{}
	var tests []string
	add := func(name string, node ast.Node, kernelNames map[string]bool) {
		d := decls[name]
		if d == nil {
			d = &decl{refs: map[string]bool{}}
			decls[name] = d
		}
		ast.Inspect(node, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && kernelNames[id.Name] {
					d.direct = true
				}
				d.refs[x.Sel.Name] = true
			case *ast.Ident:
				d.refs[x.Name] = true
			}
			return true
		})
	}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		kernelNames := map[string]bool{}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !kernelImports[p] {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			kernelNames[name] = true
		}
		for _, d := range file.Decls {
			switch x := d.(type) {
			case *ast.FuncDecl:
				add(x.Name.Name, x, kernelNames)
				if x.Recv == nil && strings.HasPrefix(x.Name.Name, "Test") && x.Name.Name != "TestMain" {
					tests = append(tests, x.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range x.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for _, n := range vs.Names {
							add(n.Name, vs, kernelNames)
						}
					}
				}
			}
		}
	}
	// Spread "reaches the kernel" along references until nothing changes.
	kernel := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for name, d := range decls {
			if kernel[name] {
				continue
			}
			reaches := d.direct
			for r := range d.refs {
				if r != name && kernel[r] {
					reaches = true
					break
				}
			}
			if reaches {
				kernel[name], changed = true, true
			}
		}
	}
	var out []string
	for _, t := range tests {
		if kernel[t] {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

// runPattern is the -test.run pattern selecting exactly these top-level tests.
func runPattern(tests []string) string {
	return "^(" + strings.Join(tests, "|") + ")$"
}
