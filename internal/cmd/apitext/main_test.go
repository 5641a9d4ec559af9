package main

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"slices"
	"testing"
)

const src = `package p

import (
	"context"
	"time"
)

const Limit = 3 * time.Second
const name = "hidden"

var ErrX error

type Options struct {
	TTL    time.Duration
	hidden int
	Inner
}

type Inner struct{ Depth int }

func (Inner) Deep() int { return 0 }

type Lease interface {
	Renew(ctx context.Context) error
	Token() uint64
}

type List[T any] []T

func (l *List[T]) Push(v T) {}

func New(ctx context.Context, names ...string) (*Options, error) { return nil, nil }

func (o *Options) Run(ctx context.Context) error { return nil }

func Map[K comparable, V any](m map[K]V) []K { return nil }

type Alias = Options
`

var want = []string{
	"pkg example.com/p, const Limit = 3000000000",
	"pkg example.com/p, const Limit time.Duration",
	"pkg example.com/p, func Map[K comparable, V any](map[K]V) []K",
	"pkg example.com/p, func New(context.Context, ...string) (*Options, error)",
	"pkg example.com/p, method (*List[T any]) Push(T)",
	"pkg example.com/p, method (*Options) Run(context.Context) error",
	"pkg example.com/p, method (Inner) Deep() int",
	"pkg example.com/p, method (Options) Deep() int",
	"pkg example.com/p, type Alias = Options",
	"pkg example.com/p, type Inner struct",
	"pkg example.com/p, type Inner struct, Depth int",
	"pkg example.com/p, type Lease interface { Renew, Token }",
	"pkg example.com/p, type Lease interface, Renew(context.Context) error",
	"pkg example.com/p, type Lease interface, Token() uint64",
	"pkg example.com/p, type List[T any] []T",
	"pkg example.com/p, type Options struct",
	"pkg example.com/p, type Options struct, TTL time.Duration",
	"pkg example.com/p, type Options struct, embedded Inner",
	"pkg example.com/p, var ErrX error",
}

// TestPackageAPI checks the lines of a package that has each kind of
// exported symbol, and that unexported ones and parameter names are left out.
func TestPackageAPI(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.Default()}
	pkg, err := conf.Check("example.com/p", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := packageAPI(pkg)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("packageAPI:\n got %q\nwant %q", got, want)
	}
}

func TestIsInternal(t *testing.T) {
	for path, want := range map[string]bool{
		"github.com/leaderkit/elector/internal/wait": true,
		"github.com/leaderkit/elector/internal":      true,
		"github.com/leaderkit/elector/partition":     false,
		"github.com/leaderkit/internalx":             false,
	} {
		if got := isInternal(path); got != want {
			t.Errorf("isInternal(%q) = %v, want %v", path, got, want)
		}
	}
}
