package backendurl_test

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/etcd"
	_ "github.com/leaderkit/elector/redlock"
	_ "github.com/leaderkit/elector/zookeeper"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

func TestMuxZeroValueAndRegister(t *testing.T) {
	var m backendurl.Mux
	if _, _, err := m.Open(t.Context(), "mem://x"); err == nil || !strings.Contains(err.Error(), "(none registered)") {
		t.Errorf("backendurl.Open on an empty Mux: got %v, want an error saying no scheme is registered", err)
	}
	m.Register("mem", backendurl.OpenerFunc(func(context.Context, *url.URL) (backend.Backend, io.Closer, error) {
		b := memory.New()
		return b, b, nil
	}))
	b, c, err := m.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatalf("backendurl.Open(mem://): %v", err)
	}
	if _, err := b.Leader(t.Context(), "e"); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader on a fresh backend: got %v, want ErrNoLeader", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := b.Leader(t.Context(), "e"); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Leader after the closer's Close: got %v, want ErrClosed", err)
	}
	if got := m.Schemes(); len(got) != 1 || got[0] != "mem" || !m.ValidScheme("mem") || m.ValidScheme("x") {
		t.Errorf("Schemes: got %v, want [mem]", got)
	}
	for _, tc := range []struct {
		scheme string
		o      backendurl.Opener
		want   string
	}{
		{"mem", backendurl.OpenerFunc(nil), "registered twice"},
		{"Bad", backendurl.OpenerFunc(nil), "malformed scheme"},
		{"", backendurl.OpenerFunc(nil), "malformed scheme"},
		{"ok", nil, "nil Opener"},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), tc.want) {
					t.Errorf("Register(%q): got panic %v, want one containing %q", tc.scheme, r, tc.want)
				}
			}()
			m.Register(tc.scheme, tc.o)
		}()
	}
}

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"", "with a scheme among etcd, etcds, migrate+both, migrate+done, migrate+new, migrate+old, redis, rediss, zk, zks"},
		{"127.0.0.1:7001", "is not a backend URL; want scheme://host:port[,host:port...]"},
		{"consul://h:8500", `unknown scheme "consul"; want one of etcd, etcds, migrate+both, migrate+done, migrate+new, migrate+old, redis, rediss, zk, zks`},
		{"redis://", "no host"},
		{"redis://h1:7001,,h2", "empty host"},
		{"redis://h1:99999", "not a number in 1-65535"},
		{"redis://h1:x", `port "x" is not a number`},
		{"redis://h1:7001,h2", ""},
		{"redis://h1/x", "database number"},
		{"redis://h1?prefx=a", `unknown query parameter "prefx"; want one of`},
		{"redis://h1?node_timeout=5", "want a duration"},
		{"redis://h1?drift_factor=lots", "want a number"},
		{"redis://h1?no_prefix=maybe", "want true or false"},
		{"redis://h1?prefix=a&prefix=b", "given 2 times"},
		{"redis://h1?ca=/x", "need the rediss:// scheme"},
		{"redis://h1?node_timeout=1h", "NodeTimeout"},
		{"rediss://h1?cert=/x", "go together"},
		{"rediss://h1?ca=/does/not/exist", "no such file"},
		{"etcd://h1/elector", "?prefix="},
		{"etcd://h1?drift_factor=0.7", "DriftFactor"},
		{"etcd://h1?session_timeout=1s", `unknown query parameter "session_timeout"`},
		{"zk://h1/a?session_timeout=1s", `unknown query parameter "session_timeout"`},
		{"zk://h1/a?ca=/x.pem", "need the zks:// scheme"},
		{"zks://h1/a?ca=/nonexistent.pem", "query parameter ca"},
		{"zk://h1/a?drift_factor=0.7", "DriftFactor"},
		{"zk://127.0.0.1:1,127.0.0.1/", ""}, // valid: the default root
		{"zk://h1/zookeeper/x", "zookeeper"},
		{"zk://h1/a?%zz", "malformed query"},
		{"redis://[::1", "is malformed"},
		{"redis://127.0.0.1:7006:1", "is malformed"},
		{"redis://::1", "is malformed"},
		{"redis://h1#frag", "no fragment"},
		{" redis://h1", "scheme \" redis\" is malformed"},
		{"redis://h_1.example-2.com,[::1]:7002,[::1],10.0.0.1", ""},
		{"redis://h%20x", "want a host name"},
		{"redis://h1:07001", "not a number in 1-65535"},
	} {
		b, c, err := backendurl.Open(t.Context(), tc.url)
		if tc.want == "" {
			if err != nil {
				t.Errorf("backendurl.Open(%q): %v, want success", tc.url, err)
			} else {
				_ = c.Close()
			}
			continue
		}
		if err == nil {
			_ = c.Close()
			t.Errorf("backendurl.Open(%q): got backend %T, want an error containing %q", tc.url, b, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("backendurl.Open(%q): got %q, want it to contain %q", tc.url, err, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "backendurl: ") {
			t.Errorf("backendurl.Open(%q): got %q, want it to start with the package name", tc.url, err)
		}
	}
}

func TestOpenRedactsPasswords(t *testing.T) {
	for _, tc := range []struct{ raw, secret string }{
		{"redis://u:s3cret@h1?bogus=1", "s3cret"},
		{"consul://u:s3cret@h1", "s3cret"},
		{"redis://u:s3cret@h1:bad", "s3cret"},
		{"redis://u:s3cret@h1/%zz", "s3cret"},
		// Defect 3 of the hardening issue: the password leaked through the
		// parse of a URL it had broken.
		{"redis://:Sec/retPW@127.0.0.1:7006", "Sec/retPW"},
		{"etcd://root:Sec#retPW@127.0.0.1:2379", "Sec#retPW"},
		{"redis//:pw@h", ":pw"},
		{"zk://u:Sec?retPW@h1", "Sec?retPW"},
		{"redis://admin:p%2Fss@h1:99999", "admin:p/ss"},
	} {
		_, _, err := backendurl.Open(t.Context(), tc.raw)
		if err == nil {
			t.Errorf("Open(%q): got nil, want an error", tc.raw)
			continue
		}
		if leak := secretRun(err.Error(), tc.secret); leak != "" {
			t.Errorf("Open(%q): got %q, which shows %q of the credentials %q", tc.raw, err, leak, tc.secret)
		}
	}
}

// secretRun returns a run of secret found in msg that redaction must hide:
// four bytes or more, or all of a secret shorter than that (two bytes at
// least); "" if there is none.
func secretRun(msg, secret string) string {
	if len(secret) < 2 {
		return ""
	}
	n := min(4, len(secret))
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(msg, secret[i:i+n]) {
			return secret[i : i+n]
		}
	}
	return ""
}

// FuzzOpenRedacts: whatever the URL, however malformed, an error from Open
// shows no run of its credentials. The URLs use schemes whose Open makes no
// connection (redis, a mistyped one, an unknown one), so the fuzzer sends
// nothing over the network.
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
		// " a" is in the message's own text ("… not a backend URL"): no leak.
		{"redis:/", " a", "@"},
		{"redis//", "redi", "h"}, // "redi" is in the list of schemes
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, prefix, userinfo, tail string) {
		switch prefix {
		case "redis://", "rediss://", "redis//", "redis:/", "consul://",
			"migrate+both://?new=redis://h&old=redis://", "migrate+new://?old=redis://":
		default:
			return // only schemes that open no connection
		}
		if strings.Contains(userinfo, "@") || strings.Contains(userinfo, "//") || strings.HasPrefix(userinfo, "/") {
			return // the userinfo ends at its '@' and starts after the "//"
		}
		raw := prefix + userinfo + "@" + tail
		_, c, err := backendurl.Open(t.Context(), raw)
		if err != nil {
			// The same URL with the credentials masked gives the message's
			// own text: a run of the credentials it has as often is no leak.
			masked := prefix + maskSecret(userinfo) + "@" + tail
			template := ""
			if _, mc, merr := backendurl.Open(t.Context(), masked); merr != nil {
				template = merr.Error()
			} else {
				_ = mc.Close()
			}
			if leak := echoedRun(err.Error(), template, userinfo); leak != "" {
				t.Fatalf("Open(%q): got %q, which shows %q of the credentials %q (Open(%q): %q)", raw, err, leak, userinfo, masked, template)
			}
			return
		}
		_ = c.Close()
	})
}

// echoedRun is secretRun for a message that may have runs of the secret in
// its own text (a short secret such as " a" is in "not a backend URL"): it
// returns a run of secret that msg has more often than template, the
// message for the same URL with the secret masked (see maskSecret), or "".
func echoedRun(msg, template, secret string) string {
	if len(secret) < 2 {
		return ""
	}
	n := min(4, len(secret))
	for i := 0; i+n <= len(secret); i++ {
		if run := secret[i : i+n]; strings.Count(msg, run) > strings.Count(template, run) {
			return run
		}
	}
	return ""
}

// maskSecret replaces every letter of secret with one letter it does not
// contain, and every digit with one digit it does not contain, keeping the
// punctuation (':' between user and password, '/', '#', '?', a space) and
// the two hex digits after each '%', so that the masked URL is malformed in
// the same way and gives the same message with the secret's letters and
// digits gone. With every letter (or digit) in the secret it is returned
// unmasked, and only runs the message has more often than that count.
func maskSecret(secret string) string {
	letter := absent(secret, "ZQXJKzqxjkVWvwYy")
	digit := absent(secret, "0123456789")
	b := []byte(secret)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '%':
			i += 2
		case ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && letter != 0:
			b[i] = letter
		case '0' <= c && c <= '9' && digit != 0:
			b[i] = digit
		}
	}
	return string(b)
}

// absent returns the first byte of candidates that s does not contain, or 0.
func absent(s, candidates string) byte {
	for i := range len(candidates) {
		if !strings.Contains(s, candidates[i:i+1]) {
			return candidates[i]
		}
	}
	return 0
}

// TestEchoedRun: the fuzz oracle tells a secret echoed in a message from
// the same bytes in the message's own text.
func TestEchoedRun(t *testing.T) {
	if got := maskSecret(":abc@1%2Fd e"); got != ":ZZZ@0%2FZ Z" {
		t.Errorf("maskSecret: got %q; want letters and digits masked, '%%' escapes and punctuation kept", got)
	}
	if got := maskSecret("Zork9"); got != "QQQQ0" {
		t.Errorf("maskSecret: got %q; want a mask letter the secret lacks", got)
	}
	const fixed = "not a backend URL"
	for _, tc := range []struct{ msg, template, secret, want string }{
		{fixed, fixed, " a", ""}, // in the fixed text: no leak
		{fixed + `: "redis:/ a@h"`, fixed + `: "redis:/ Z@h"`, " a", " a"},
		{`"u:hunter2@h"`, `"Z:ZZZZZZ0@h"`, "u:hunter2", "u:hu"},
		{`"u:hunter2@h"`, "another message", "u:hunter2", "u:hu"},
	} {
		if got := echoedRun(tc.msg, tc.template, tc.secret); got != tc.want {
			t.Errorf("echoedRun(%q, %q, %q) = %q; want %q", tc.msg, tc.template, tc.secret, got, tc.want)
		}
	}
}
