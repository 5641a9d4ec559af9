package backendurl

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

func TestMuxZeroValueAndRegister(t *testing.T) {
	var m Mux
	if _, _, err := m.Open(t.Context(), "mem://x"); err == nil || !strings.Contains(err.Error(), "(none registered)") {
		t.Errorf("Open on an empty Mux: got %v, want an error saying no scheme is registered", err)
	}
	m.Register("mem", OpenerFunc(func(context.Context, *url.URL) (backend.Backend, io.Closer, error) {
		b := memory.New()
		return b, b, nil
	}))
	b, c, err := m.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatalf("Open(mem://): %v", err)
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
		o      Opener
		want   string
	}{
		{"mem", OpenerFunc(nil), "registered twice"},
		{"Bad", OpenerFunc(nil), "malformed scheme"},
		{"", OpenerFunc(nil), "malformed scheme"},
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
		{"", "with a scheme among etcd, etcds, redis, rediss, zk"},
		{"127.0.0.1:7001", "is not a backend URL; want scheme://host:port[,host:port...]"},
		{"consul://h:8500", `unknown scheme "consul"; want one of etcd, etcds, redis, rediss, zk`},
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
		{"zk://127.0.0.1:1,127.0.0.1/", ""}, // valid: the default root
		{"zk://h1/zookeeper/x", "zookeeper"},
		{"zk://h1/a?session_timeout=1ms", "SessionTimeout"},
		{"zk://h1/a?%zz", "malformed query"},
	} {
		b, c, err := Open(t.Context(), tc.url)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Open(%q): %v, want success", tc.url, err)
			} else {
				_ = c.Close()
			}
			continue
		}
		if err == nil {
			_ = c.Close()
			t.Errorf("Open(%q): got backend %T, want an error containing %q", tc.url, b, tc.want)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q): got %q, want it to contain %q", tc.url, err, tc.want)
		}
		if !strings.HasPrefix(err.Error(), "backendurl: ") {
			t.Errorf("Open(%q): got %q, want it to start with the package name", tc.url, err)
		}
	}
}

func TestOpenRedactsPasswords(t *testing.T) {
	for _, raw := range []string{
		"redis://u:s3cret@h1?bogus=1",
		"consul://u:s3cret@h1",
		"redis://u:s3cret@h1:bad",
		"redis://u:s3cret@h1/%zz",
	} {
		_, _, err := Open(t.Context(), raw)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q): got %v, want an error without the password", raw, err)
		}
	}
}
