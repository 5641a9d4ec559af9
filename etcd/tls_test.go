package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TLS and username/password are the client's business: the driver works
// through a client configured for both, against the member that requires
// client certificates and auth.
func TestTLSAndAuth(t *testing.T) {
	t.Parallel()
	endpoint, caFile, certFile, keyFile := testenv.EtcdTLS(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s", caFile)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	connect := func(password string) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{
			Endpoints:   []string{endpoint},
			TLS:         tlsConfig,
			Username:    testenv.EtcdUser,
			Password:    password,
			DialTimeout: 5 * time.Second,
			Logger:      zap.NewNop(),
		})
	}
	if cli, err := connect("wrong"); err == nil {
		_ = cli.Close()
		t.Fatal("client with a wrong password: connected, want refused: the server must require auth")
	}
	cli, err := connect(testenv.EtcdPassword)
	if err != nil {
		t.Fatalf("client with TLS and password: %v", err)
	}
	defer func() { _ = cli.Close() }()

	a, b := testBackend(t, cli, nil), testBackend(t, cli, nil)
	name := testName(t)
	// A keepalive to this member takes 0.2-0.3 s (password auth), against
	// 2 ms for a read: a 1 s TTL, renewed every TTL/3 with that bound,
	// leaves no slack on a loaded machine; alice's lease must also outlast
	// bob's campaign over TLS before her renewal.
	const ttl = 10 * time.Second
	la := mustCampaign(t, a, backend.Candidate{Election: name, Identity: "alice", TTL: ttl})
	ch := campaignAsync(testCtx(t), b, backend.Candidate{Election: name, Identity: "bob", TTL: ttl})
	queued(t, b, name, 2, ch)
	if err := la.Renew(testCtx(t)); err != nil {
		t.Fatalf("Renew over TLS: %v", err)
	}
	h, err := b.Leader(testCtx(t), name)
	if err != nil || h.Identity != "alice" || h.Token != la.Token() {
		t.Fatalf("Leader over TLS: got (%+v, %v), want alice", h, err)
	}
	if err := la.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 10*time.Second)
	if r.err != nil {
		t.Fatalf("Campaign over TLS after the release: %v", r.err)
	}
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Leader(testCtx(t), name); !errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader after both released: got %v, want ErrNoLeader", err)
	}
}
