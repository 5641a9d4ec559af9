package redlock

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
)

// A rediss:// URL reaches a Redis that accepts TLS only, verifies the
// server's certificate against ca, presents the client certificate the
// server requires, and authenticates with the password: an election is won
// and its holder read through it. Without the client certificate, with a
// wrong password, or over plain redis://, the same node refuses. Not
// t.Parallel: the refusals come on 1 s requests and must name their cause,
// which a handshake slowed past that by other tests' load would turn into
// a timeout.
func TestURLRedisTLS(t *testing.T) {
	addr, ca, cert, key := testenv.RedisTLS(t)
	// Each request of the election below must succeed on a loaded machine.
	q := url.Values{"ca": {ca}, "cert": {cert}, "key": {key}, "request_timeout": {"5s"}}
	good := "rediss://:" + url.QueryEscape(testenv.RedisPassword) + "@" + addr + "?" + q.Encode()

	b, closer := openURLTest(t, good)
	election := name(t)
	ctx := testCtx(t)
	l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "tls", TTL: 5 * time.Second})
	if err != nil {
		t.Fatalf("Campaign over rediss://: %v", err)
	}
	h, err := b.Leader(ctx, election)
	if err != nil || h.Identity != "tls" || h.Token != l.Token() {
		t.Errorf("Leader over rediss://: got %+v, %v; want identity tls with token %d", h, err, l.Token())
	}
	if err := l.Renew(ctx); err != nil {
		t.Errorf("Renew over rediss://: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release over rediss://: %v", err)
	}
	if _, err := b.Leader(ctx, election); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader after Release: got %v, want ErrNoLeader", err)
	}
	if err := closer.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	noCert := url.Values{"ca": {ca}, "request_timeout": {"1s"}}
	for _, tc := range []struct{ what, raw, want string }{
		// TLS 1.3 refuses it after the handshake: the alert, or a reset
		// connection that loses it; either way the error says why.
		{"no client certificate", "rediss://:" + testenv.RedisPassword + "@" + addr + "?" + noCert.Encode(), "asked for a client certificate, and none is configured"},
		{"a wrong password", "rediss://:wrong-pw@" + addr + "?" + q.Encode(), "WRONGPASS"},
		{"no password", "rediss://" + addr + "?" + q.Encode(), "NOAUTH"},
		{"plain redis://", "redis://:" + testenv.RedisPassword + "@" + addr + "?request_timeout=1s", ""},
	} {
		b, closer := openURLTest(t, tc.raw)
		_, err := b.Leader(ctx, election)
		t.Logf("Leader with %s: %v", tc.what, err)
		if err == nil || errors.Is(err, backend.ErrNoLeader) || !strings.Contains(err.Error(), tc.want) ||
			strings.Contains(err.Error(), "wrong-pw") {
			t.Errorf("Leader with %s: got %v, want a refusal mentioning %q without the password", tc.what, err, tc.want)
		}
		if err := closer.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// openURLTest opens raw with backendurl and fails t if it cannot.
func openURLTest(t *testing.T, raw string) (backend.Backend, io.Closer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, closer, err := backendurl.Open(ctx, raw)
	if err != nil {
		t.Fatalf("backendurl.Open: %v", err)
	}
	return b, closer
}
