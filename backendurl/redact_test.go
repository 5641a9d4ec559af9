package backendurl_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/migrate" // and its migrate+<phase>:// schemes
)

// The oracle of the redaction tests. The credentials of a URL are written
// at one place, prefix + credentials + "@" + tail, with any characters at
// all ('/', '?', '#', '@' and '%' included, encoded or not). Open must
// answer the URL exactly as it answers the same URL with every letter and
// digit of the credentials changed (see otherCredentials): an error that
// quotes any of them, even one, or that depends on them in any other way
// (a password read as a port), differs. Punctuation is kept, so that the
// two URLs have the same shape.

// otherCredentials returns s with every ASCII letter and digit replaced by
// the next one of its kind (a→b, z→a, Z→A, 9→0) and every other byte kept.
// The two bytes after a '%' stay hex digits if they are (f→0) and other
// letters if they are not (z→g), so that each escape stays valid or
// invalid as it was.
func otherCredentials(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		if b[i] != '%' {
			b[i] = nextOfKind(b[i], false)
			continue
		}
		for j := i + 1; j < len(b) && j <= i+2; j++ {
			b[j] = nextOfKind(b[j], true)
		}
		i += 2
	}
	return string(b)
}

// nextOfKind returns the letter or digit after c among those of its kind
// (in an escape: hex digits, or other letters of c's case), cycling; any
// other byte unchanged.
func nextOfKind(c byte, escape bool) byte {
	kinds := []string{"0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
	if escape {
		kinds = []string{"0123456789abcdefABCDEF", "ghijklmnopqrstuvwxyz", "GHIJKLMNOPQRSTUVWXYZ"}
	}
	for _, k := range kinds {
		if i := strings.IndexByte(k, c); i >= 0 {
			return k[(i+1)%len(k)]
		}
	}
	return c
}

// opener opens a URL and returns Open's error message, "" on success
// (closing what it opened).
type opener func(raw string) string

// openWith returns the opener of m, nil for backendurl.Open.
func openWith(ctx context.Context, m *backendurl.Mux) opener {
	return func(raw string) string {
		open := backendurl.Open
		if m != nil {
			open = m.Open
		}
		_, c, err := open(ctx, raw)
		if err != nil {
			return err.Error()
		}
		_ = c.Close()
		return ""
	}
}

// checkHidden fails the test if open answers prefix+cred+rest differently
// from the same URL with otherCredentials(cred).
func checkHidden(t *testing.T, open opener, prefix, cred, rest string) {
	t.Helper()
	raw, other := prefix+cred+rest, prefix+otherCredentials(cred)+rest
	if got, want := open(raw), open(other); got != want {
		t.Fatalf("the answer to a URL depends on its credentials' letters and digits, so it shows them:\n"+
			"  Open(%q):\n    %q\n  Open(%q):\n    %q", raw, got, other, want)
	}
}

// stubMux has the scheme "stub", whose Opener reads the URL as the drivers
// do, with every helper of Params, then fails: the shared grammar, over
// any shape of URL, without a connection.
var stubMux = func() *backendurl.Mux {
	m := new(backendurl.Mux)
	m.Register("stub", backendurl.OpenerFunc(func(_ context.Context, u *url.URL) (backend.Backend, io.Closer, error) {
		if _, err := backendurl.Hosts(u, "1"); err != nil {
			return nil, nil, err
		}
		if err := backendurl.NoPath(u, "want no path"); err != nil {
			return nil, nil, err
		}
		p, err := backendurl.NewParams(u)
		if err != nil {
			return nil, nil, err
		}
		_, _, _, _ = p.String("s"), p.Duration("d"), p.Float("f"), p.Bool("b")
		if _, err := p.TLS(false, "stubs"); err != nil {
			return nil, nil, err
		}
		if err := p.Finish(); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.New("stub: nothing to open")
	}))
	return m
}()

// TestOpenShowsNoCredentialByte: an error from Open shows not one letter
// or digit of a URL's credentials, however short the password and wherever
// an unencoded '?', '/', '#' or '@' in it cuts the URL: a '?' ends the
// authority early, so "admin:k9" would parse as host and port and an error
// about port "k9" would quote two bytes of the password.
func TestOpenShowsNoCredentialByte(t *testing.T) {
	open := openWith(t.Context(), nil)
	for _, tc := range [][3]string{
		{"redis://", "admin:k9?secret", "h:7706"},
		{"zk://", "admin:k9?secret", "h:2181"},
		{"etcd://", "admin:k9?secret", "h:2379"},
		{"rediss://", "admin:k9?secret", "h:7706"},
		{"redis://", "admin:1234?se", "h"},                            // a valid port: the rest was read as the query
		{"redis://", "u:k9@h?x", "y"},                                 // '@' and '?' in the password
		{"redis://", "u:k9@h/x", "y"},                                 // '@' and '/' in the password
		{"redis://", "u:k9/x", "y"},                                   // read as a path
		{"redis://", "u:p%zzq", "h"},                                  // a malformed escape
		{"redis://", "k", "h#x"},                                      // a '#', after a one-letter user
		{"redis//", "x://y", "h"},                                     // the credentials in what looks like the scheme
		{"redis://", "u:k9#x", "h"},                                   // a '#' in the password
		{"consul://", "u:k9?x", "h"},                                  // an unknown scheme
		{"migrate+both://?new=redis://h&old=redis://", "u:k9?x", "h"}, // nested, not encoded
	} {
		checkHidden(t, open, tc[0], tc[1], "@"+tc[2])
		if msg := open(tc[0] + tc[1] + "@" + tc[2]); strings.Contains(msg, `"k9"`) {
			t.Errorf("Open(%q): got %q, which quotes the password's %q", tc[0]+tc[1]+"@"+tc[2], msg, "k9")
		}
	}
	// The same URLs nested in a migrate URL, percent-encoded as its
	// documentation says, and in the query of a URL as any value.
	for _, tc := range [][2]string{
		{"admin:k9?secret", "h:7706"},
		{"k", "h:99999"}, // a one-letter user name in the outer URL's echo
		{"u:k9", "h/x"},
	} {
		nested(t, open, tc[0], tc[1])
	}
	// URLs with credentials, percent-encoded, where a driver's grammar
	// quotes what it does not take.
	stub := openWith(t.Context(), stubMux)
	for _, tc := range [][3]string{
		{"stub://", "admin:k9?secret", "@h:7706"},
		{"stub://h?d=redis%3A%2F%2F", "k9", "%40h"},        // a URL as a duration, decoded in the message
		{"stub://h?redis%3A%2F%2F", "k9", "%40h"},          // a URL as a parameter name
		{"stub://h/redis%3A%2F%2F", "k9", "%40h"},          // a URL as a path
		{"stub://h?s=redis%3A%2F%2Fu%3A", "k9", "%40h%zz"}, // a malformed escape after it
	} {
		checkHidden(t, stub, tc[0], tc[1], tc[2])
	}
}

// nested checks the URL "redis://" + cred + "@" + tail nested in migrate
// URLs, percent-encoded, in the parameters and positions a user could put
// it, through Open and migrate.CheckURL. Each shape fails whatever the
// inner URL (the new URL's port 0, an unknown parameter...): a migrate
// backend that opens contacts its stores.
func nested(t *testing.T, open opener, cred, tail string) {
	t.Helper()
	for _, shape := range []string{
		"migrate+PHASE://?old=INNER&new=redis%3A%2F%2Fh2%3A0",
		"migrate+PHASE://?new=INNER&old=INNER&bogus=1",
		"migrate+PHASE://h?old=INNER",
		"migrate+PHASE://?old=redis%3A%2F%2Fh1&new=redis%3A%2F%2Fh2&renew_interval=INNER",
		"migrate+PHASE://?old=redis%3A%2F%2Fh1&new=redis%3A%2F%2Fh2&epoch=INNER",
		"migrate+PHASE://?INNER",
		"migrate+PHASE://?old=INNER&new=INNER", // the same store twice
		// Valid for CheckURL up to new_name; Open fails on old's request_timeout.
		"migrate+PHASE://?old=redis%3A%2F%2Fh1%3Frequest_timeout%3Dx&new=redis%3A%2F%2Fh2&new_name=%01INNER",
	} {
		for _, phase := range []string{"both", "done", "bogus"} {
			build := func(cred string) string {
				return strings.ReplaceAll(strings.ReplaceAll(shape, "PHASE", phase), "INNER", url.QueryEscape("redis://"+cred+"@"+tail))
			}
			raw, other := build(cred), build(otherCredentials(cred))
			if got, want := open(raw), open(other); got != want {
				t.Fatalf("the answer to a migrate URL depends on a nested URL's credentials' letters and digits, so it shows them:\n"+
					"  Open(%q):\n    %q\n  Open(%q):\n    %q", raw, got, other, want)
			}
			if got, want := fmt.Sprint(migrate.CheckURL(raw)), fmt.Sprint(migrate.CheckURL(other)); got != want {
				t.Fatalf("the answer of migrate.CheckURL depends on a nested URL's credentials' letters and digits, so it shows them:\n"+
					"  CheckURL(%q):\n    %q\n  CheckURL(%q):\n    %q", raw, got, other, want)
			}
		}
	}
}

// FuzzOpenRedacts: whatever the URL, however malformed, the answer of Open
// does not depend on the letters and digits of its credentials (see the
// oracle above): no error shows one of them. The URLs use schemes whose
// Open makes no connection (redis, a mistyped one, an unknown one, migrate
// over redis, and stub, which runs the grammar every driver shares), so
// the fuzzer sends nothing over the network.
func FuzzOpenRedacts(f *testing.F) {
	for _, seed := range [][3]string{
		{"redis://", ":Sec/retPW", "127.0.0.1:7006"},
		{"redis//", ":pw", "h"},
		{"redis:/", "user:pa ss", "h1?x=1"},
		{"redis://", "u:pass", "h1@h2/x"},
		{"consul://", "u:s3cret", "h1"},
		{"redis://", "u:p%2Fss", "h1:99999"},
		{"rediss://", "admin:hunter22", "h1?ca=/nope"},
		{"redis://", "u:Sec#ret", "h1/0"},
		{"migrate+both://?new=redis://h&old=redis://", "u:hunter22", "h1"},
		{"migrate+new://?old=redis://", ":Sec/retPW", "h1&new=redis://h2"},
		{"redis:/", " a", "@"},
		{"redis//", "redi", "h"},
		{"redis://", "admin:k9?secret", "h:7706"},
		{"stub://", "admin:k9?secret", "h:7706"},
		{"stub://", "u:k9@h/x", "y?d=1s"},
		{"redis://", "?k9", "h"},
		{"redis://", "u:%zz", "h"},
		{"zk://", "u:k9?secret", "h?tick_time=2s&sync_limit=5"},
		{"zk://", "u:s3cret", "h?sync_limit=1.5"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, prefix, cred, tail string) {
		open := openWith(t.Context(), nil)
		switch prefix {
		case "redis://", "rediss://", "redis//", "redis:/", "consul://",
			"migrate+both://?new=redis://h&old=redis://", "migrate+new://?old=redis://":
		case "stub://":
			open = openWith(t.Context(), stubMux)
		default:
			return // only schemes that open no connection
		}
		checkHidden(t, open, prefix, cred, "@"+tail)
	})
}

// TestOpenURLRefusesStrayAt: a parsed URL with an '@' outside its userinfo
// is refused, without being quoted: url.Parse reads a password with an
// unencoded '?' or '/' as a host and a query or path, which an error
// would quote.
func TestOpenURLRefusesStrayAt(t *testing.T) {
	for _, tc := range [][2]string{
		{"redis://admin:1234?pw@h", "pw"},
		{"redis://u:12/pw@h", "pw"},
		{"redis:admin:pw@h", "pw"},
	} {
		u, err := url.Parse(tc[0])
		if err != nil {
			t.Fatalf("url.Parse(%q): %v", tc[0], err)
		}
		_, _, err = backendurl.DefaultMux().OpenURL(t.Context(), u)
		if err == nil || !strings.Contains(err.Error(), "an '@' after the host list") || strings.Contains(err.Error(), tc[1]) {
			t.Errorf("OpenURL(%q): got %v, want the '@' after the host list refused, without the password's %q", tc[0], err, tc[1])
		}
	}
}

// TestParse: Parse reads a URL as Open does: the host list as written,
// the credentials in User; and refuses what Open refuses, quoting nothing
// of the credentials.
func TestParse(t *testing.T) {
	u, err := backendurl.Parse("redis://u:p%2Fw@h1:1,[::1]:2/0?prefix=x")
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); u.Scheme != "redis" || u.Host != "h1:1,[::1]:2" || u.User.Username() != "u" || pw != "p/w" || u.Path != "/0" || u.RawQuery != "prefix=x" {
		t.Errorf("Parse: got %#v, want scheme redis, host list h1:1,[::1]:2, user u, password p/w, path /0, query prefix=x", u)
	}
	for _, raw := range []string{"redis://u:k9?x@h", "redis://u:k9@h/x@y", "redis://u:k9#x@h", "redis://u:k9%zz@h", "redis//u:k9@h"} {
		if _, err := backendurl.Parse(raw); err == nil || strings.Contains(err.Error(), "k9") {
			t.Errorf("Parse(%q): got %v, want an error without the password", raw, err)
		}
	}
}
