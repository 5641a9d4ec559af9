// Command doclint fails on text that narrates a run instead of stating
// behaviour: commit-hash-like tokens, ISO dates, times of day and run
// letters, in the comments of Go files and in Markdown documents.
//
// Usage:
//
//	go run ./internal/cmd/doclint [-all] [-allow FILE] [FILE...]
//
// With FILE arguments it checks those files; with -all it checks every Go
// file of the repository (every module, testdata and hidden directories
// left out) and every Markdown file at the root, under docs/ and examples/.
// In a .go file only comments are read (go/scanner), never string literals.
// In a .md file every line is read, except the lines of docs/benchmarks.md
// and docs/chaos.md that begin with "Measured" (which must name the date
// and the commit of a measurement) and the release headings of
// CHANGELOG.md ("## [0.1.0] - YYYY-MM-DD").
//
// The rules, each on a whole word:
//
//   - hash: 7 to 40 lowercase hexadecimal characters with at least one
//     digit and one letter (a commit, abbreviated or not);
//   - date: 20YY-MM-DD;
//   - time: H:MM or HH:MM, a valid time of day;
//   - run letter: "run" or "runs" followed by single capital letters.
//
// A token that is none of these (a lease ID in an example, say) can be
// allowed by listing it, one per line, in the -allow file (default
// scripts/doclint-allow.txt; # starts a comment). doclint prints one line
// per finding, file:line: rule: token: the line, and exits 1 when it found
// any, 2 on a usage or read error.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A rule is one kind of narration, found by a regular expression.
type rule struct {
	name string
	re   *regexp.Regexp
	// ok, when set, rejects a match that only looks like the rule.
	ok func(match string) bool
}

var rules = []rule{
	{"commit hash", regexp.MustCompile(`\b[0-9a-f]{7,40}\b`), func(m string) bool {
		return strings.ContainsAny(m, "0123456789") && strings.ContainsAny(m, "abcdef")
	}},
	{"date", regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`), nil},
	{"time of day", regexp.MustCompile(`\b\d{1,2}:\d\d\b`), func(tok string) bool {
		var h, m int
		_, err := fmt.Sscanf(tok, "%d:%d", &h, &m)
		return err == nil && h < 24 && m < 60
	}},
	{"run letter", regexp.MustCompile(`\b[Rr]uns? [A-Z]\b(?:, [A-Z]\b)*(?:,? and [A-Z]\b)?`), nil},
	// This project's own issues and how a defect was found are history:
	// another project's issue is cited by its address (owner/repo#N).
	{"issue number", regexp.MustCompile(`\b[Ii]ssues? #?\d+\b`), nil},
	{"fix narration", regexp.MustCompile(`\b[Bb]efore (?:the|this) fix\b|\bthe fix (?:for|of) (?:issue|defect)\b`), nil},
}

// A finding is one match of a rule on a line of a file.
type finding struct {
	file string
	line int
	rule string
	tok  string
	text string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s: %s: %s", f.file, f.line, f.rule, f.tok, strings.TrimSpace(f.text))
}

// checkLine returns the findings of every rule on one line of text.
func checkLine(file string, line int, text string, allow map[string]bool) []finding {
	var out []finding
	for _, r := range rules {
		for _, m := range r.re.FindAllString(text, -1) {
			if (r.ok != nil && !r.ok(m)) || allow[m] {
				continue
			}
			out = append(out, finding{file, line, r.name, m, text})
		}
	}
	return out
}

// exempt reports whether a line of a Markdown file is one that must name a
// date and a commit: a Measured line of the benchmark and chaos pages, or a
// release heading of the changelog.
func exempt(file, text string) bool {
	switch filepath.ToSlash(filepath.Clean(file)) {
	case "docs/benchmarks.md", "docs/chaos.md":
		return strings.HasPrefix(text, "Measured")
	case "CHANGELOG.md":
		return releaseHeading.MatchString(text)
	}
	return false
}

var releaseHeading = regexp.MustCompile(`^## \[\d+\.\d+\.\d+\] - 20\d\d-\d\d-\d\d$`)

// checkMarkdown checks every line of a Markdown file.
func checkMarkdown(file string, src []byte, allow map[string]bool) []finding {
	var out []finding
	for i, text := range strings.Split(string(src), "\n") {
		if exempt(file, text) {
			continue
		}
		out = append(out, checkLine(file, i+1, text, allow)...)
	}
	return out
}

// checkGo checks the comments of a Go file, line by line.
func checkGo(file string, src []byte, allow map[string]bool) []finding {
	fset := token.NewFileSet()
	tf := fset.AddFile(file, -1, len(src))
	var s scanner.Scanner
	s.Init(tf, src, nil, scanner.ScanComments)
	var out []finding
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok != token.COMMENT {
			continue
		}
		first := fset.Position(pos).Line
		for i, text := range strings.Split(lit, "\n") {
			out = append(out, checkLine(file, first+i, text, allow)...)
		}
	}
}

// check reads one file and checks it by its kind.
func check(file string, allow map[string]bool) ([]finding, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	switch filepath.Ext(file) {
	case ".go":
		return checkGo(file, src, allow), nil
	case ".md":
		return checkMarkdown(file, src, allow), nil
	}
	return nil, fmt.Errorf("%s: want a .go or .md file", file)
}

// all lists every file -all checks, relative to the current directory.
func all() ([]string, error) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(name, ".go"):
			files = append(files, path)
		case strings.HasSuffix(name, ".md"):
			dir := filepath.ToSlash(filepath.Dir(path))
			if dir == "." || dir == "docs" || strings.HasPrefix(dir, "examples") {
				files = append(files, path)
			}
		}
		return nil
	})
	return files, err
}

// readAllow reads the allowed tokens of file, one per line; a missing file
// allows nothing.
func readAllow(file string) (map[string]bool, error) {
	allow := map[string]bool{}
	f, err := os.Open(file)
	if os.IsNotExist(err) {
		return allow, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			allow[line] = true
		}
	}
	return allow, sc.Err()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command with its arguments and outputs; it returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("doclint", flag.ContinueOnError)
	fl.SetOutput(stderr)
	everything := fl.Bool("all", false, "check every Go file's comments and every Markdown document")
	allowFile := fl.String("allow", "scripts/doclint-allow.txt", "`file` of tokens to allow, one per line")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	files := fl.Args()
	if *everything {
		more, err := all()
		if err != nil {
			fmt.Fprintf(stderr, "doclint: %v\n", err)
			return 2
		}
		files = append(files, more...)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "doclint: no files: give FILE arguments or -all")
		return 2
	}
	slices.Sort(files)
	files = slices.Compact(files)
	allow, err := readAllow(*allowFile)
	if err != nil {
		fmt.Fprintf(stderr, "doclint: %v\n", err)
		return 2
	}
	n := 0
	for _, file := range files {
		found, err := check(file, allow)
		if err != nil {
			fmt.Fprintf(stderr, "doclint: %v\n", err)
			return 2
		}
		for _, f := range found {
			fmt.Fprintln(stdout, f)
		}
		n += len(found)
	}
	if n > 0 {
		fmt.Fprintf(stderr, "doclint: %d findings in %d files checked: say what the code does and why; dates, commits and runs belong in git log, figures in docs/benchmarks.md with their Measured line\n", n, len(files))
		return 1
	}
	return 0
}
