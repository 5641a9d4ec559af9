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

// queued waits until election has n candidate keys as b's client reads
// them: the background Campaign ch has written its key and waits. It
// counts once, then follows the election's creates and deletes, and fails
// t if ch returns first or after 10 s.
func queued(t testing.TB, b *Backend, election string, n int, ch <-chan result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir := b.electionDir(election)
	key, opts := candidateRange(dir)
	r, err := b.cli.Get(ctx, key, opts...)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, kv := range r.Kvs {
		if isCandidate(dir, kv.Key) {
			count++
		}
	}
	key, opts = candidateRange(dir, clientv3.WithRev(r.Header.Revision+1))
	events := b.cli.Watch(ctx, key, opts...)
	for count < n {
		select {
		case res := <-ch:
			t.Fatalf("Campaign returned (%v, %v) before %d candidates queued; want it waiting", res.l, res.err, n)
		case wr, ok := <-events:
			if !ok {
				t.Fatalf("%d of %d candidates of %s within 10 s", count, n, election)
			}
			for _, ev := range wr.Events {
				switch {
				case !isCandidate(dir, ev.Kv.Key):
				case ev.Type == clientv3.EventTypeDelete:
					count--
				case ev.IsCreate():
					count++
				}
			}
		}
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

// signalWatcher reports each Watch call on calls (dropped while calls is
// full) before making it.
type signalWatcher struct {
	clientv3.Watcher
	calls chan struct{}
}

func (w signalWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	select {
	case w.calls <- struct{}{}:
	default:
	}
	return w.Watcher.Watch(ctx, key, opts...)
}

// countingLease counts KeepAliveOnce calls that reach the client, and
// those in flight, and, if calls is not nil, reports each as it starts
// (dropped while calls is full).
type countingLease struct {
	clientv3.Lease
	n        atomic.Int64
	inflight atomic.Int64
	calls    chan struct{}
}

func (c *countingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	c.n.Add(1)
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	select {
	case c.calls <- struct{}{}:
	default:
	}
	return c.Lease.KeepAliveOnce(ctx, id)
}
