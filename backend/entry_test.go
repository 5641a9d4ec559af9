package backend

import (
	"strings"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	for _, e := range []Entry{
		{Identity: "alice", Priority: 1},
		{Identity: "bob the builder", Priority: 1 << 40, Aside: true},
		{Identity: "x", Priority: -3},
	} {
		s := EncodeEntry(e)
		got, err := DecodeEntry(s)
		if err != nil || got != e {
			t.Errorf("DecodeEntry(EncodeEntry(%+v)) = %+v, %v; want the entry back", e, got, err)
		}
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "want \"elector-candidate/1\"",
		"alice":                                "want \"elector-candidate/1\"",
		"elector-candidate/1 x aside alice":    "priority \"x\" is not an integer",
		"elector-candidate/1 2 sleeping alice": "state \"sleeping\" is neither aside nor campaigning",
		"elector-candidate/2 2 aside alice":    "want \"elector-candidate/1\"",
		"elector-candidate/1 2 campaigning":    "want \"elector-candidate/1\"",
	} {
		if _, err := DecodeEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeEntry(%q): got %v, want an error containing %q", in, err, want)
		}
	}
}
