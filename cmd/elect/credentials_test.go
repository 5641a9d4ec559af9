//go:build unix

package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestErrorsShowNoPassword: whatever the subcommand, a backend URL whose
// password holds an unencoded '?' (or is nested, percent-encoded, in a
// migrate URL) is refused as a usage error that shows no byte of the
// password — not even the two characters before the '?', which a parser
// reading them as a port would print (port "k9" is not a number).
func TestErrorsShowNoPassword(t *testing.T) {
	const password = "k9?secret"
	bad := "redis://admin:" + password + "@127.0.0.1:7706"
	nested := "migrate+both://?old=" + url.QueryEscape(bad) + "&new=" + url.QueryEscape("redis://127.0.0.1:7707")
	for _, args := range [][]string{
		{"run", "--election=e", "--backend=" + bad, "--", "true"},
		{"status", "--election=e", "--backend=" + bad},
		{"watch", "--election=e", "--backend=" + bad},
		{"partitions", "--group=g", "--partitions=4", "--backend=" + bad},
		{"status", "--election=e", "--backend=" + nested},
		{"migrate", "cleanup", "--election=e", "--backend=" + strings.Replace(nested, "migrate+both", "migrate+done", 1)},
	} {
		code, out := runElect(t, nil, args...)
		if code != exitUsage {
			t.Errorf("elect %s %s: exit %d, want %d (usage):\n%s", args[0], args[1], code, exitUsage, out)
		}
		for _, leak := range []string{"k9", "secret", `"k"`, `"9"`} {
			if strings.Contains(out, leak) {
				t.Errorf("elect %s %s: the output shows %s of the password %q:\n%s", args[0], args[1], leak, password, out)
			}
		}
	}
}
