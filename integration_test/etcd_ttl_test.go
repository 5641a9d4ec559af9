package integration_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// A cluster with etcd's default timing (election timeout 1 s) grants no
// lease shorter than ceil(1.5 × 1 s) = 2 s. A Candidate.TTL of 1 s would get
// a 2 s lease, longer than asked: Campaign refuses it with ErrInvalid
// naming the minimum, and accepts 2 s.
func TestEtcdTTLBelowServerMinimum(t *testing.T) {
	t.Parallel()
	endpoint := startDefaultEtcd(t)
	b := etcdBackend(t, etcdClient(t, endpoint))
	ctx := etcdCtx(t)
	name := etcdName("ttl-min")
	for range 2 { // refused every time, not only at the first grant
		_, err := b.Campaign(ctx, backend.Candidate{Election: name, Identity: "alice", TTL: time.Second})
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "want 2s or more") {
			t.Fatalf("Campaign with TTL 1s on a cluster whose minimum lease TTL is 2s: got %v, want ErrInvalid naming 2s", err)
		}
	}
	sent := time.Now()
	l, err := b.Campaign(ctx, backend.Candidate{Election: name, Identity: "alice", TTL: 2 * time.Second})
	if err != nil {
		t.Fatalf("Campaign with TTL 2s: %v", err)
	}
	returned := time.Now()
	if d := l.Deadline(); d.Before(backend.LeaseDeadline(sent, 2*time.Second, backend.DefaultDriftFactor)) || d.After(returned.Add(2*time.Second)) {
		t.Errorf("Deadline of a 2s lease: got %v after the call, want within [2s less drift after the call, 2s after its return]", d.Sub(sent))
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// startDefaultEtcd starts a one-member etcd with the default raft timing on
// free ports in a temporary directory, and stops it at the end of t. It
// returns the client endpoint.
func startDefaultEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("etcd binary: %v", err)
		}
		t.Skipf("etcd binary not found (%v); run scripts/servers.sh install", err)
	}
	client, peer := freePort(t), freePort(t)
	cmd := exec.Command(bin, "--name", "ttl", "--data-dir", t.TempDir(), "--logger", "zap", "--log-outputs", "stderr",
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "ttl="+peer)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	endpoint := strings.TrimPrefix(client, "http://")
	ctx, cancel := context.WithTimeout(etcdCtx(t), 30*time.Second)
	defer cancel()
	// The client waits for the member to accept connections.
	if _, err := etcdClient(t, endpoint).Get(ctx, "ready"); err != nil {
		t.Fatalf("etcd on %s not ready: %v", endpoint, err)
	}
	return endpoint
}

// freePort returns an http:// URL on a port of 127.0.0.1 that was free a
// moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprintf("http://%s", ln.Addr())
}
