package examples_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESections: examples/README.md has a section for every example
// program (a directory with a main.go) with the command that runs it, and
// no section for a program that does not exist.
func TestREADMESections(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	programs := map[string]bool{}
	for _, e := range entries {
		if _, err := os.Stat(e.Name() + "/main.go"); e.IsDir() && err == nil {
			programs[e.Name()] = true
		}
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+) — `).FindAllStringSubmatch(string(readme), -1) {
		sections[m[1]] = true
		if !programs[m[1]] {
			t.Errorf("README.md has a section for %q, which is no example program", m[1])
		}
	}
	for p := range programs {
		if !sections[p] || !strings.Contains(string(readme), "go run ./"+p) {
			t.Errorf("README.md: no section \"## %s — ...\" with \"go run ./%s\"", p, p)
		}
	}
}
