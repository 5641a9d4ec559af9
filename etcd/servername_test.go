package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
)

// An etcds:// URL's server_name is the name the server's certificate is
// checked against, not the endpoint's host: the member at EtcdTLSNamed is
// reached at 127.0.0.1 with a certificate whose only name is etcd.internal,
// so a connection that ignored server_name would fail verification.
func TestURLServerName(t *testing.T) {
	t.Parallel()
	ep := testenv.EtcdTLSNamed(t)
	_, ca, cert, key := testenv.EtcdTLS(t)
	q := url.Values{"ca": {ca}, "cert": {cert}, "key": {key}}

	// The certificate is valid for etcd.internal and for nothing else.
	for name, wantOK := range map[string]bool{"": false, testenv.EtcdTLSServerName: true, "other.internal": false} {
		err := handshake(t, ep, ca, cert, key, name)
		var verr *tls.CertificateVerificationError
		if wantOK && err != nil || !wantOK && !errors.As(err, &verr) {
			t.Fatalf("TLS handshake with %s, server name %q: got %v, want success only for %s and an x509 error otherwise",
				ep, name, err, testenv.EtcdTLSServerName)
		}
	}

	if err := openAndLead(t, "etcds://"+ep+"?"+q.Encode(), 3*time.Second); err == nil {
		t.Fatalf("etcds:// to a certificate for %s without server_name: got no error, want a failure",
			testenv.EtcdTLSServerName)
	}
	q.Set("server_name", testenv.EtcdTLSServerName)
	if err := openAndLead(t, "etcds://"+ep+"?"+q.Encode(), 10*time.Second); err != nil {
		t.Fatalf("etcds:// with server_name=%s: %v", testenv.EtcdTLSServerName, err)
	}
}

// handshake makes a TLS connection to addr with the CA and client
// certificate of the test servers and the given server name ("" means
// addr's host), and returns the handshake's error.
func handshake(t *testing.T, addr, ca, cert, key, name string) error {
	u := &url.URL{Scheme: "etcds", Host: addr, RawQuery: url.Values{"ca": {ca}, "cert": {cert}, "key": {key}, "server_name": {name}}.Encode()}
	p, err := backendurl.NewParams(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := p.TLS(true, "etcds")
	if err != nil {
		t.Fatal(err)
	}
	d := tls.Dialer{Config: cfg}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		_ = conn.Close()
	}
	return err
}

// openAndLead opens raw, wins an election through it, checks the holder
// with Leader, releases, and closes, all within timeout. It returns the
// first error.
func openAndLead(t *testing.T, raw string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, closer, err := backendurl.Open(ctx, raw)
	if err != nil {
		return err
	}
	defer func() {
		if err := closer.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	election := testName(t)
	l, err := b.Campaign(ctx, backend.Candidate{Election: election, Identity: "tls", TTL: 3 * time.Second})
	if err != nil {
		return err
	}
	h, err := b.Leader(ctx, election)
	if err != nil || h.Identity != "tls" || h.Token != l.Token() {
		t.Errorf("Leader: got %+v, %v; want identity tls with token %d", h, err, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		return err
	}
	if _, err := b.Leader(ctx, election); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader after Release: got %v, want ErrNoLeader", err)
	}
	return nil
}
