// Command apitext prints the exported API of Go packages one symbol per line,
// in the format of the Go project's api/go1.*.txt files, sorted:
//
//	pkg github.com/leaderkit/elector, func New(backend.Backend, string, *Options) (*Elector, error)
//	pkg github.com/leaderkit/elector, method (*Elector) Run(context.Context) error
//	pkg github.com/leaderkit/elector, type Options struct, TTL time.Duration
//
// Usage:
//
//	go run ./internal/cmd/apitext [packages]   (default ./...)
//
// Packages whose import path has an internal element, and main packages, are
// left out: they are not importable API. The type information comes from the
// compiler's export data (go list -export), so the output is what importers
// compile against. scripts/apicheck.sh compares it with api/elector.txt.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	patterns := os.Args[1:]
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	lines, err := apiOf(patterns)
	if err != nil {
		fmt.Fprintf(os.Stderr, "apitext: %v\n", err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// listed is what apitext reads of `go list -json` for one package.
type listed struct {
	ImportPath string
	Name       string
	Export     string
	DepOnly    bool
	Error      *struct{ Err string }
}

// apiOf loads the packages matching patterns from export data and returns
// their API lines, sorted.
func apiOf(patterns []string) ([]string, error) {
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Name,Export,DepOnly,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	var targets []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && p.Name != "main" && !isInternal(p.ImportPath) {
			targets = append(targets, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var lines []string
	for _, p := range targets {
		pkg, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("import %s: %v", p.ImportPath, err)
		}
		lines = append(lines, packageAPI(pkg)...)
	}
	slices.Sort(lines)
	return slices.Compact(lines), nil
}

func isInternal(path string) bool {
	for _, el := range strings.Split(path, "/") {
		if el == "internal" {
			return true
		}
	}
	return false
}

// packageAPI returns one line per exported symbol of pkg: constants, variables,
// functions, types, struct fields, methods (promoted ones included) and
// interface methods.
func packageAPI(pkg *types.Package) []string {
	w := writer{pkg: pkg}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			w.add("const %s %s", name, w.typ(obj.Type()))
			w.add("const %s = %s", name, obj.Val().ExactString())
		case *types.Var:
			w.add("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			w.add("func %s%s", name, w.signature(obj.Type().(*types.Signature)))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
	return w.lines
}

type writer struct {
	pkg   *types.Package
	lines []string
}

func (w *writer) add(format string, args ...any) {
	w.lines = append(w.lines, fmt.Sprintf("pkg %s, ", w.pkg.Path())+fmt.Sprintf(format, args...))
}

// qualifier names other packages by their name, as source code does.
func (w *writer) qualifier(p *types.Package) string {
	if p == w.pkg {
		return ""
	}
	return p.Name()
}

func (w *writer) typ(t types.Type) string { return types.TypeString(t, w.qualifier) }

// signature prints a signature without the word func and without parameter
// names: renaming a parameter is not an API change.
func (w *writer) signature(sig *types.Signature) string {
	var b strings.Builder
	if tp := sig.TypeParams(); tp != nil && tp.Len() > 0 {
		b.WriteString(w.typeParams(tp))
	}
	b.WriteString("(")
	for i := 0; i < sig.Params().Len(); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			b.WriteString("..." + w.typ(t.(*types.Slice).Elem()))
			continue
		}
		b.WriteString(w.typ(t))
	}
	b.WriteString(")")
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(res.At(0).Type()))
	default:
		b.WriteString(" (")
		for i := 0; i < res.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(w.typ(res.At(i).Type()))
		}
		b.WriteString(")")
	}
	return b.String()
}

func (w *writer) typeParams(tp *types.TypeParamList) string {
	parts := make([]string, tp.Len())
	for i := range parts {
		p := tp.At(i)
		parts[i] = p.Obj().Name() + " " + w.typ(p.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (w *writer) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		w.add("type %s = %s", name, w.typ(types.Unalias(obj.Type())))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		w.add("type %s %s", name, w.typ(obj.Type()))
		return
	}
	if tp := named.TypeParams(); tp != nil && tp.Len() > 0 {
		name += w.typeParams(tp)
	}
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.add("type %s struct", name)
		for i := 0; i < u.NumFields(); i++ {
			f := u.Field(i)
			switch {
			case f.Embedded():
				w.add("type %s struct, embedded %s", name, w.typ(f.Type()))
			case f.Exported():
				w.add("type %s struct, %s %s", name, f.Name(), w.typ(f.Type()))
			}
		}
	case *types.Interface:
		var names []string
		for i := 0; i < u.NumMethods(); i++ {
			m := u.Method(i)
			if m.Exported() {
				names = append(names, m.Name())
			} else {
				names = append(names, "unexported methods")
			}
			if m.Exported() {
				w.add("type %s interface, %s%s", name, m.Name(), w.signature(m.Type().(*types.Signature)))
			}
		}
		slices.Sort(names)
		w.add("type %s interface { %s }", name, strings.Join(slices.Compact(names), ", "))
		return // an interface's methods are listed above
	default:
		w.add("type %s %s", name, w.typ(u))
	}
	w.methods(named, name)
}

// methods lists the exported methods of T and *T, promoted ones included,
// each with the receiver it needs.
func (w *writer) methods(named *types.Named, name string) {
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for i := 0; i < ptr.Len(); i++ {
		m := ptr.At(i).Obj()
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		w.add("method (%s) %s%s", recv, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
}
