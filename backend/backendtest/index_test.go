package backendtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every optional interface of package backend is declared in its
// optional.go, listed in its package documentation's index, and checked by
// RunWrapper; a new ability that is not fails here.
func TestAbilitiesIndexed(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	var declared []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.InterfaceType); !ok || !ts.Name.IsExported() {
					continue
				}
				if ts.Name.Name == "Backend" || ts.Name.Name == "Lease" {
					continue // the contract itself
				}
				if !strings.HasSuffix(name, "optional.go") {
					t.Errorf("optional interface %s: declared in %s, want backend/optional.go, where every ability is", ts.Name.Name, name)
				}
				declared = append(declared, ts.Name.Name)
			}
		}
	}
	for _, name := range declared {
		if !slices.ContainsFunc(abilities, func(a ability) bool { return a.name == name }) {
			t.Errorf("optional interface %s: got no check in abilities, want one: RunWrapper checks that wrappers forward every ability", name)
		}
		if !strings.Contains(doc, "["+name+"]") {
			t.Errorf("optional interface %s: got no entry in the package documentation's # Optional abilities, want one", name)
		}
	}
	for _, a := range abilities {
		if !slices.Contains(declared, a.name) {
			t.Errorf("ability %s: checked, but package backend declares no such interface", a.name)
		}
	}
}
