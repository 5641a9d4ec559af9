package compare

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// markdownCells returns the cells of each Markdown table row in text.
func markdownCells(text string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(c)
		}
		rows = append(rows, cells)
	}
	return rows
}

// TestREADMETable: the measured table of README.md's which-backend section
// is what `make compare-readme` pastes, a full `elect compare --markdown`
// over the three test backends: the same rows, labelled for the default
// options, and a column per backend, under the command that made it and the
// load average. Editing it by hand, or pasting a run with other options,
// fails here.
func TestREADMETable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- elect compare: begin -->", "<!-- elect compare: end -->"
	text := string(readme)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the block %s … %s that make compare-readme fills", begin, end)
	}
	block := text[i:j]
	for _, want := range []string{"make compare-readme", "load average", "elect 'compare' '--markdown'"} {
		if !strings.Contains(block, want) {
			t.Errorf("the README block does not say %q; regenerate it with make compare-readme", want)
		}
	}
	o, err := (*Options)(nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Options: *o}
	for _, name := range []string{"redis", "etcd", "zk"} {
		rep.Backends = append(rep.Backends, &BackendReport{Name: name})
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	want, got := markdownCells(md.String()), markdownCells(block)
	if len(got) != len(want) {
		t.Fatalf("README table has %d rows; elect compare --markdown prints %d:\n%s", len(got), len(want), md.String())
	}
	for r := range want {
		if len(got[r]) != len(want[r]) || got[r][0] != want[r][0] {
			t.Errorf("README table row %d: %q; want %d cells, first %q", r, got[r], len(want[r]), want[r][0])
		}
	}
	if len(got) > 0 && strings.Join(got[0], ",") != ",redis,etcd,zk" {
		t.Errorf("README table header %q; want the backends redis, etcd, zk", got[0])
	}
	for r, row := range got[2:] {
		for _, c := range row[1:] {
			if c == "" || strings.Contains(c, "not counted") || (want[r+2][0] == "errors" && c != "0") {
				t.Errorf("README table row %q: cell %q; want a measurement (and no error)", row[0], c)
			}
		}
	}
}
