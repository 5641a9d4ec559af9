package redlock

import (
	"encoding/hex"
	"strings"
	"testing"
)

// FuzzValueRoundTrip: every value this Backend writes parses back to what
// was written.
func FuzzValueRoundTrip(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), 0, uint64(0), "node-1")
	f.Add([]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), 7, uint64(1<<63), "a b c")
	f.Add([]byte("0000000000000000"), 1<<31-1, uint64(1), "")
	f.Fuzz(func(t *testing.T, random []byte, attempt int, token uint64, identity string) {
		if len(random) != campaignIDLen/2 || attempt < 0 || attempt > 1<<31-1 {
			return
		}
		campaign := hex.EncodeToString(random)
		id := leaseID(campaign, attempt)
		v := encodeValue(id, token, identity)
		p, ok := parseValue(v)
		if !ok || p.id != id || p.token != token || p.identity != identity {
			t.Fatalf("parseValue(%q): got %+v, %v; want {id:%q token:%d identity:%q}, true", v, p, ok, id, token, identity)
		}
	})
}

// FuzzParseValue: parseValue accepts only values in this Backend's canonical
// format: what it parses, encodeValue writes back byte for byte.
func FuzzParseValue(f *testing.F) {
	for _, seed := range []string{
		"0123456789abcdef0123456789abcdef.0 5 node-1",
		"0123456789abcdef0123456789abcdef.0 05 node-1",
		"0123456789ABCDEF0123456789abcdef.0 5 node-1",
		"0123456789abcdef0123456789abcdef.00 5 node-1",
		"0123456789abcdef0123456789abcdef.+1 5 node-1",
		"0123456789abcdef0123456789abcdef.1 5",
		"0123456789abcdef0123456789abcdef.1 18446744073709551616 x",
		"a-redsync-value",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		p, ok := parseValue(v)
		if !ok {
			return
		}
		if again := encodeValue(p.id, p.token, p.identity); again != v {
			t.Fatalf("parseValue(%q): got %+v, which encodes as %q; want only canonical values accepted", v, p, again)
		}
		if !strings.HasSuffix(p.id, " ") || len(p.id) < campaignIDLen+3 {
			t.Fatalf("parseValue(%q): got id %q, want \"<32 hex>.<n> \"", v, p.id)
		}
	})
}
