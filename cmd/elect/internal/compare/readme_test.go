package compare

import (
	"bytes"
	"os"
	"regexp"
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

// measuredLine is the one line above a table of docs/benchmarks.md that
// names the date, the machine, the commit and the command of the run.
var measuredLine = regexp.MustCompile(`(?m)^Measured 20\d\d-\d\d-\d\d on \d+ cores, load average .+ before and .+ after .*, commit [0-9a-f]{7,40}\b.*, with ` + "`make compare-readme`" + `:$`)

// TestCompareReadmeTable: the measured table of backends side by side in
// docs/benchmarks.md is what `make compare-readme` pastes, a full
// `elect compare --markdown` over the four test backends: the same rows,
// labelled for the default options, and a column per backend, under the
// command that made it and one Measured line naming the date, the cores,
// the load average and the commit. Editing it by hand, or pasting a run
// with other options, fails here.
func TestCompareReadmeTable(t *testing.T) {
	doc, err := os.ReadFile("../../../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- elect compare: begin -->", "<!-- elect compare: end -->"
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("docs/benchmarks.md lacks the block %s … %s that make compare-readme fills", begin, end)
	}
	block := text[i:j]
	if !strings.Contains(block, "elect 'compare' '--markdown'") {
		t.Errorf("the block does not show the elect compare command; regenerate it with make compare-readme")
	}
	if n := len(measuredLine.FindAllString(block, -1)); n != 1 || strings.Count(block, "\nMeasured") != 1 {
		t.Errorf("the block has %d well-formed Measured lines and %d lines starting Measured; want exactly one, as make compare-readme writes it", n, strings.Count(block, "\nMeasured"))
	}
	o, err := (*Options)(nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	rep := &Report{Options: *o}
	for _, name := range []string{"redis", "etcd", "zk", "kube"} {
		rep.Backends = append(rep.Backends, &BackendReport{Name: name})
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	want, got := markdownCells(md.String()), markdownCells(block)
	if len(got) != len(want) {
		t.Fatalf("docs/benchmarks.md table has %d rows; elect compare --markdown prints %d:\n%s", len(got), len(want), md.String())
	}
	for r := range want {
		if len(got[r]) != len(want[r]) || got[r][0] != want[r][0] {
			t.Errorf("docs/benchmarks.md table row %d: %q; want %d cells, first %q", r, got[r], len(want[r]), want[r][0])
		}
	}
	if len(got) > 0 && strings.Join(got[0], ",") != ",redis,etcd,zk,kube" {
		t.Errorf("docs/benchmarks.md table header %q; want the backends redis, etcd, zk, kube", got[0])
	}
	for r, row := range got[2:] {
		for _, c := range row[1:] {
			if c == "" || strings.Contains(c, "not counted") || (want[r+2][0] == "errors" && c != "0") {
				t.Errorf("docs/benchmarks.md table row %q: cell %q; want a measurement (and no error)", row[0], c)
			}
		}
	}
}
