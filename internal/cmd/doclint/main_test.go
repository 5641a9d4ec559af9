package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRules: each rule finds what it is for and leaves alike-looking text
// alone.
func TestRules(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string // rule names found, in rule order
	}{
		{"fixed in 42f6fad, see f15dd25", []string{"commit hash", "commit hash"}},
		{"on eb8fac3d9e1b2c3d4e5f60718293a4b5c6d7e8f9", []string{"commit hash"}},
		{"the value deadbeef, the number 1234567, the word decade", nil},
		{"0x1f3a5b7c and ab12cd (six) and sha256:", nil},
		{"measured 2026-12-01 at 18:26", []string{"date", "time of day"}},
		{"as in the runs of 9:40", []string{"time of day"}},
		{"host 127.0.0.1:2379, h1:6379, USER 65532:65532, 25:61", nil},
		{"Run O was clean", []string{"run letter"}},
		{"three more runs (K, L, M) and runs K, L and M", []string{"run letter"}},
		{"elect run --once; run a command; the run I", []string{"run letter"}},
		{"Redlock runs 5 masters", nil},
		{"the scale benchmark (issue 13); issues 11 and 12", []string{"issue number", "issue number"}},
		{"see kubernetes/client-go#448 and the issue tracker", nil},
		{"Before the fix the key stayed", []string{"fix narration"}},
		{"a fix for a stale read", nil},
	} {
		var got []string
		for _, f := range checkLine("x.md", 1, tc.text, nil) {
			got = append(got, f.rule)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: got %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestGoCommentsOnly: in a Go file only comments are checked, with their
// own line numbers; string literals may hold anything.
func TestGoCommentsOnly(t *testing.T) {
	src := "package p\n\n// Doc says fixed in 42f6fad.\nconst s = \"2026-12-01 42f6fad\"\n\n/* a block\n   on 2026-12-01 */\nvar x = 1 // at 18:26\n"
	got := checkGo("p.go", []byte(src), nil)
	var lines []string
	for _, f := range got {
		lines = append(lines, f.rule+"@"+string(rune('0'+f.line)))
	}
	if want := "commit hash@3,date@7,time of day@8"; strings.Join(lines, ",") != want {
		t.Errorf("got %q, want %s", lines, want)
	}
}

// TestExemptLines: the Measured lines of the benchmark and chaos pages and
// the changelog's release headings may carry dates and commits; the same
// line elsewhere may not.
func TestExemptLines(t *testing.T) {
	measured := "Measured 2026-12-01 on a 2-core machine, commit eb8fac3, with `make bench`.\n"
	for _, tc := range []struct {
		file, text string
		want       int
	}{
		{"docs/benchmarks.md", measured, 0},
		{"docs/chaos.md", measured, 0},
		{"README.md", measured, 2},
		{"docs/benchmarks.md", "The run of 2026-12-01.\n", 1},
		{"CHANGELOG.md", "## [0.1.0] - 2026-12-02\n", 0},
		{"CHANGELOG.md", "- fixed on 2026-12-02\n", 1},
	} {
		if got := len(checkMarkdown(tc.file, []byte(tc.text), nil)); got != tc.want {
			t.Errorf("%s: %q: got %d findings, want %d", tc.file, tc.text, got, tc.want)
		}
	}
}

// TestRun: the command exits 1 and names file, line and token on a
// finding, 0 on clean files, and honours the allow file.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.md")
	good := filepath.Join(dir, "good.md")
	allow := filepath.Join(dir, "allow.txt")
	for name, text := range map[string]string{
		bad:   "# x\n\nfixed in 42f6fad\n",
		good:  "# x\n\nfixed, with a test\n",
		allow: "42f6fad # an example lease ID\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-allow", filepath.Join(dir, "none"), bad, good}, &out, &errb); code != 1 || !strings.Contains(out.String(), "bad.md:3: commit hash: 42f6fad") {
		t.Errorf("bad file: exit %d, output %q; want 1 and bad.md:3 named", code, out.String())
	}
	out.Reset()
	if code := run([]string{"-allow", filepath.Join(dir, "none"), good}, &out, &errb); code != 0 || out.Len() != 0 {
		t.Errorf("good file: exit %d, output %q; want 0 and nothing", code, out.String())
	}
	if code := run([]string{"-allow", allow, bad}, &out, &errb); code != 0 {
		t.Errorf("allowed token: exit %d, output %q; want 0", code, out.String())
	}
	if code := run(nil, &out, &errb); code != 2 {
		t.Errorf("no files: exit %d, want 2", code)
	}
}
