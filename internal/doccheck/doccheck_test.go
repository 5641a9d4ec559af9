package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedIdentifiersDocumented parses every non-test Go file of the
// module (nested modules and testdata excluded) and fails for each exported
// declaration, method or package without a doc comment.
func TestExportedIdentifiersDocumented(t *testing.T) {
	pkgDoc := map[string]bool{} // directory → has a package comment
	files := 0
	walkSources(t, func(dir, name string) bool {
		if name == "examples" || name == "integration_test" {
			return true
		}
		_, err := os.Stat(filepath.Join(dir, "go.mod"))
		return err == nil // another module
	}, func(rel string, f *ast.File) {
		files++
		dir := filepath.Dir(rel)
		pkgDoc[dir] = pkgDoc[dir] || f.Doc != nil
		for _, decl := range f.Decls {
			checkDecl(t, rel, decl)
		}
	}, parser.ParseComments)
	if files == 0 {
		t.Fatal("got no Go files, want the module's: the walk started in the wrong place")
	}
	for dir, ok := range pkgDoc {
		if !ok {
			t.Errorf("package in %s has no package comment", dir)
		}
	}
}

func checkDecl(t *testing.T, file string, decl ast.Decl) {
	t.Helper()
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || d.Doc != nil {
			return
		}
		if d.Recv != nil && !exportedRecv(d.Recv) {
			return // a method of an unexported type is not in go doc
		}
		t.Errorf("%s: exported func %s has no doc comment", file, d.Name.Name)
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && d.Doc == nil && s.Doc == nil {
					t.Errorf("%s: exported type %s has no doc comment", file, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					// A grouped const or var block may share the group's doc.
					if n.IsExported() && d.Doc == nil && s.Doc == nil && s.Comment == nil {
						t.Errorf("%s: exported %s %s has no doc comment", file, d.Tok, n.Name)
					}
				}
			}
		}
	}
}

func exportedRecv(fl *ast.FieldList) bool {
	typ := fl.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}

// TestPackageDocsShort keeps the package docs references, not design
// papers: each driver's at most 120 lines, those of every package a user
// imports or runs (nested modules too; not internal ones, examples or
// test programs) together at most 1,100. Derivations belong in
// docs/design.
func TestPackageDocsShort(t *testing.T) {
	lines := map[string]int{} // directory → lines of its package comment
	walkSources(t, func(_, name string) bool {
		switch name {
		case "internal", "examples", "integration_test", "scripts":
			return true
		}
		return false
	}, func(rel string, f *ast.File) {
		if f.Doc != nil {
			lines[filepath.Dir(rel)] += strings.Count(f.Doc.Text(), "\n")
		}
	}, parser.ParseComments|parser.PackageClauseOnly)
	for _, driver := range []string{"redlock", "etcd", "zookeeper", "kube"} {
		if n, ok := lines[driver]; !ok || n > 120 {
			t.Errorf("package %s: doc of %d lines (found: %v); want 1 to 120", driver, n, ok)
		}
	}
	total := 0
	for _, n := range lines {
		total += n
	}
	if total > 1100 {
		t.Errorf("package docs: %d lines in all; want at most 1,100 (by package: %v)", total, lines)
	}
	t.Logf("package docs: %d lines in all; drivers: redlock %d, etcd %d, zookeeper %d, kube %d", total, lines["redlock"], lines["etcd"], lines["zookeeper"], lines["kube"])
}

// walkSources parses every non-test Go file of the repository with mode
// and calls fn with its path relative to the root, skipping hidden
// directories, testdata, and the directories skip names (it gets each
// directory's path and name).
func walkSources(t *testing.T, skip func(dir, name string) bool, fn func(rel string, f *ast.File), mode parser.Mode) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || skip(path, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(rel, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
