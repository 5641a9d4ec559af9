//go:build unix

package main

import (
	"bytes"
	"context"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// usageLines returns the lines of text's "Usage:" block (up to the first
// blank line after it), with runs of blanks collapsed.
func usageLines(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.Join(strings.Fields(l), " ")
		switch {
		case l == "Usage:":
			in = true
		case in && l == "" && len(out) > 0:
			return out
		case in && l != "":
			out = append(out, l)
		}
	}
	return out
}

// TestDocListsEverySubcommand: the package documentation's usage block is
// the one elect prints (topUsage), every subcommand it lists is one elect
// accepts, and the list elect gives for an unknown command names the same
// subcommands, so that none of the three can drift from the others.
func TestDocListsEverySubcommand(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	doc, usage := usageLines(f.Doc.Text()), usageLines(topUsage)
	if len(usage) == 0 {
		t.Fatal("topUsage has no Usage: block")
	}
	if !slices.Equal(doc, usage) {
		t.Errorf("doc.go's Usage block differs from elect's usage (topUsage in main.go):\ngot  %q\nwant %q", doc, usage)
	}

	var listed []string
	for _, l := range usage {
		fields := strings.Fields(l)
		if len(fields) < 2 || fields[0] != "elect" {
			t.Errorf("usage line %q: want it to start with elect SUBCOMMAND", l)
			continue
		}
		listed = append(listed, fields[1])
	}
	for _, sub := range listed {
		args := []string{sub, "--help"}
		if sub == "help" {
			args = args[:1]
		}
		var stdout, stderr bytes.Buffer
		elect(context.Background(), args, &stdout, &stderr)
		if strings.Contains(stderr.String(), "unknown command") {
			t.Errorf("elect %s --help: %s; want the listed subcommand accepted", sub, stderr.String())
		}
	}

	var stdout, stderr bytes.Buffer
	if code := elect(context.Background(), []string{"no-such-subcommand"}, &stdout, &stderr); code != exitUsage {
		t.Fatalf("elect no-such-subcommand: exit %d, want %d", code, exitUsage)
	}
	m := regexp.MustCompile(`want ([a-z, ]+) or ([a-z]+)\n`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("elect no-such-subcommand: %q; want a message listing the subcommands", stderr.String())
	}
	known := append(strings.Split(m[1], ", "), m[2])
	slices.Sort(known)
	slices.Sort(listed)
	if !slices.Equal(known, listed) {
		t.Errorf("subcommands named for an unknown command %q, listed in the usage %q: want the same", known, listed)
	}
}
