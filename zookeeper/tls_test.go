package zookeeper

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
)

// tlsConfig returns the client TLS configuration for the TLS server of the
// test servers: its CA, and the client certificate when withCert.
func tlsConfig(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	_, ca, cert, key := testenv.ZKTLS(t)
	pem, err := os.ReadFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", ca)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if withCert {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

// A zks:// URL reaches a ZooKeeper server that accepts TLS only (Netty's
// secureClientPort, client certificates required): a campaign through it
// wins, and a Backend made with Options.TLS sees the leader and queues
// behind it.
func TestURLZKTLS(t *testing.T) {
	t.Parallel()
	addr, ca, cert, key := testenv.ZKTLS(t)
	root := testPrefix + "-tls-" + randomSuffix()
	raw := "zks://" + addr + "?" + url.Values{"prefix": {root}, "ca": {ca}, "cert": {cert}, "key": {key}}.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, closer, err := backendurl.Open(ctx, raw)
	if err != nil {
		t.Fatalf("backendurl.Open(%q): %v", raw, err)
	}
	defer closeOrFail(t, closer)
	b, err := New([]string{addr}, &Options{Prefix: root, TLS: tlsConfig(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOrFail(t, b)

	la, err := a.Campaign(ctx, backend.Candidate{Election: "e", Identity: "alice", TTL: testTTL})
	if err != nil {
		t.Fatalf("Campaign over zks://: %v", err)
	}
	if h, err := b.Leader(ctx, "e"); err != nil || h.Identity != "alice" || h.Token != la.Token() {
		t.Fatalf("Leader over Options.TLS: got %+v, %v; want alice with token %d", h, err, la.Token())
	}
	ch := make(chan error, 1)
	go func() {
		lb, err := b.Campaign(ctx, backend.Candidate{Election: "e", Identity: "bob", TTL: testTTL})
		if err == nil {
			err = lb.Release(ctx)
		}
		ch <- err
	}()
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("Renew over zks://: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release over zks://: %v", err)
	}
	if err := <-ch; err != nil {
		t.Fatalf("Campaign over Options.TLS after alice's release: %v", err)
	}
	if _, err := a.Leader(ctx, "e"); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader after both released: got %v, want ErrNoLeader", err)
	}
}

// With Options.TLS and ACL zk.AuthACL, the znodes belong to the client
// certificate's identity, which the server's x509 auth provider gives the
// session: creator-only access without a password.
func TestZKTLSCertificateACL(t *testing.T) {
	t.Parallel()
	addr, _, _, _ := testenv.ZKTLS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New([]string{addr}, &Options{Prefix: testPrefix + "-tlsacl-" + randomSuffix(), TLS: tlsConfig(t, true),
		ACL: zk.AuthACL(zk.PermAll)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeOrFail(t, b)
	l, err := b.Campaign(ctx, backend.Candidate{Election: "e", Identity: "alice", TTL: testTTL})
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	acl, _, err := l.(*lease).s.conn.GetACL(l.(*lease).path)
	if err != nil || len(acl) != 1 || acl[0].Scheme != "x509" || !strings.Contains(acl[0].ID, "CN=elector-client") {
		t.Fatalf("ACL of the leader's znode: got %+v, %v; want only x509 CN=elector-client", acl, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The secure port refuses what is not mutual TLS, and the campaign says so
// at once instead of hanging, with the cause in Options.Logger: plain zk://
// (the server drops the connection: go-zookeeper logs EOF), zks:// without
// a client certificate (the server's TLS alert) and zks:// without the CA
// (an x509 error).
func TestZKTLSRefusals(t *testing.T) {
	t.Parallel()
	addr, ca, _, _ := testenv.ZKTLS(t)
	for _, tc := range []struct{ what, raw, want string }{
		{"plain zk://", "zk://" + addr + "?prefix=/x", "EOF"},
		{"no client certificate", "zks://" + addr + "?prefix=/x&ca=" + url.QueryEscape(ca), "remote error: tls"},
		{"zks:// without ca", "zks://" + addr + "?prefix=/x", "x509: certificate signed by unknown authority"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			rec := &slogRecorder{}
			b := openRecording(t, tc.raw, rec)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := b.Campaign(ctx, backend.Candidate{Election: "e", Identity: "mallory", TTL: testTTL})
			if !errors.Is(err, zk.ErrNoServer) {
				t.Fatalf("Campaign: got %v, want zk.ErrNoServer: no session can be made", err)
			}
			if !rec.has(tc.want) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				t.Errorf("logged %q; want a warning mentioning %q", rec.msgs, tc.want)
			}
		})
	}
}

// openRecording opens the URL raw with its go-zookeeper diagnostics going
// to rec, and closes the Backend when t ends.
func openRecording(t *testing.T, raw string, rec *slogRecorder) *Backend {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := openURL(context.Background(), u)
	if err != nil {
		t.Fatalf("openURL(%q): %v", raw, err)
	}
	zb := b.(*Backend)
	zb.cfg.logger = slog.New(rec)
	t.Cleanup(func() { closeOrFail(t, zb) })
	return zb
}

func closeOrFail(t *testing.T, c io.Closer) {
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
