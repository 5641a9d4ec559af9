package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// testClient returns a client on the test cluster, closed when t ends.
func testClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cli := newClient(t, testenv.EtcdEndpoints(t))
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testBackend returns a Backend on cli, closed when t ends.
func testBackend(t testing.TB, cli *clientv3.Client, opts *Options) *Backend {
	t.Helper()
	b, err := New(cli, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testName returns an election name unique to this run of t.
func testName(t testing.TB) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "etcdtest/" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + hex.EncodeToString(r[:])
}

// testCtx returns a context that ends with t, or after a minute.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func cand(election, id string) backend.Candidate {
	return backend.Candidate{Election: election, Identity: id, TTL: testTTL}
}

// mustCampaign campaigns and fails t unless it wins.
func mustCampaign(t testing.TB, b *Backend, c backend.Candidate) *lease {
	t.Helper()
	l, err := b.Campaign(testCtx(t), c)
	if err != nil {
		t.Fatalf("Campaign(%q, %q): got %v, want a lease", c.Election, c.Identity, err)
	}
	return l.(*lease)
}

type result struct {
	l   backend.Lease
	err error
}

// campaignAsync campaigns in the background.
func campaignAsync(ctx context.Context, b backend.Backend, c backend.Candidate) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := b.Campaign(ctx, c)
		ch <- result{l, err}
	}()
	return ch
}

// await returns the background Campaign's result, failing t after d.
func await(t testing.TB, ch <-chan result, d time.Duration) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("Campaign: no result within %v", d)
		return result{}
	}
}

// pending fails t if the background Campaign returns within d.
func pending(t testing.TB, ch <-chan result, d time.Duration) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("Campaign returned (%v, %v) while the election was held; want it waiting", r.l, r.err)
	case <-time.After(d):
	}
}

// countingLease counts KeepAliveOnce calls that reach the client and, if
// calls is not nil, reports each as it starts (dropped while calls is
// full).
type countingLease struct {
	clientv3.Lease
	n     atomic.Int64
	calls chan struct{}
}

func (c *countingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	c.n.Add(1)
	select {
	case c.calls <- struct{}{}:
	default:
	}
	return c.Lease.KeepAliveOnce(ctx, id)
}
