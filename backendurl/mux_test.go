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
		{"redis://h1?request_timeout=5", "want a duration"},
		{"redis://h1?drift_factor=lots", "want a number"},
		{"redis://h1?no_prefix=maybe", "want true or false"},
		{"redis://h1?prefix=a&prefix=b", "given 2 times"},
		{"redis://h1?ca=/x", "need the rediss:// scheme"},
		{"redis://h1?request_timeout=1h", "RequestTimeout"},
		{"rediss://h1?cert=/x", "go together"},
		{"rediss://h1?ca=/does/not/exist", "no such file"},
		{"etcd://h1/elector", "?prefix="},
		{"etcd://h1?drift_factor=0.7", "DriftFactor"},
		{"etcd://h1?request_timeout=-1s", "RequestTimeout"},
		{"etcd://h1?session_timeout=1s", `unknown query parameter "session_timeout"`},
		{"zk://h1?prefix=/a&session_timeout=1s", `unknown query parameter "session_timeout"`},
		{"zk://h1?ca=/x.pem", "need the zks:// scheme"},
		{"zks://h1?ca=/nonexistent.pem", "query parameter ca"},
		{"zk://h1?drift_factor=0.7", "DriftFactor"},
		{"zk://127.0.0.1:1,127.0.0.1/", ""}, // valid: the default prefix
		{"zk://h1/elector", "?prefix=/elector"},
		{"zk://h1?tick_time=2s&sync_limit=5", ""},
		{"zk://h1?tick_time=2s", "SyncLimit 0; want both set"},
		{"zk://h1?sync_limit=1.5&tick_time=2s", "query parameter sync_limit is 1.5; want a whole number"},
		{"zk://h1?sync_limit=NaN&tick_time=2s", "query parameter sync_limit is NaN"},
		{"zk://h1?tick_time=500us&sync_limit=5", "whole milliseconds"},
		{"zk://h1?tick_time=soon&sync_limit=5", `tick_time="soon": want a duration`},
		{"zk://h1?prefix=elector", "Prefix"},
		{"zk://h1?prefix=/zookeeper/x", "zookeeper"},
		{"zk://h1?%zz", "malformed query"},
		{"redis://[::1", "is malformed"},
		{"redis://127.0.0.1:7006:1", "is malformed"},
		{"redis://::1", "is malformed"},
		{"redis://h1#frag", "no fragment"},
		{" redis://h1", "scheme \" redis\" is malformed"},
		{"redis://admin:k9?secret@h:7706", "an '@' after the host list"},
		{"redis://h1?prefix=a@b", "'@' in a path or query value as %40"},
		{"redis://u:p%zzq@h1", "malformed user name or password"},
		{"redis//u:p://h1", `the scheme, before "://", is malformed`},
		{"migrate+both://?bogus=1", `"migrate+both://?bogus=1": unknown query parameter "bogus"`},
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
