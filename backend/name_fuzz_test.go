package backend_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/leaderkit/elector/backend"
)

// FuzzValidateElection: ValidateElection accepts exactly the names its doc
// comment describes, and every refusal wraps ErrInvalid.
func FuzzValidateElection(f *testing.F) {
	for _, seed := range []string{
		"jobs", "jobs/eu", "a b", "", "/a", "a/", "a//b", "a/./b", "..", "a\x00b",
		"a\tb", "\xff", "é/ü", "a\u2028b", "a\u00a0b", strings.Repeat("x", 257),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := backend.ValidateElection(name)
		if want := ruleBroken(name); (err == nil) != (want == "") {
			t.Fatalf("ValidateElection(%q): got %v, want %s", name, err, orValid(want))
		}
		if err != nil && !errors.Is(err, backend.ErrInvalid) {
			t.Fatalf("ValidateElection(%q): got %v, want an error wrapping ErrInvalid", name, err)
		}
	})
}

// ruleBroken restates the rules of ValidateElection independently: it
// returns the rule name breaks, or "" for a valid name.
func ruleBroken(name string) string {
	switch {
	case name == "" || len(name) > backend.MaxElectionLen:
		return "1 to MaxElectionLen bytes"
	case !utf8.ValidString(name):
		return "valid UTF-8"
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return "no empty segment"
	}
	for _, r := range name {
		if r == utf8.RuneError || unicode.IsControl(r) || (unicode.IsSpace(r) && r != ' ') {
			return "no control or space character but ' '"
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "." || seg == ".." {
			return "no . or .. segment"
		}
	}
	return ""
}

func orValid(rule string) string {
	if rule == "" {
		return "nil: the name is valid"
	}
	return "an error: the rule " + rule
}
