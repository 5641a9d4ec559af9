package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
)

// etcdTTL is the lease TTL of the etcd tests and benchmarks: the 2 s every
// side-by-side benchmark uses, for every system, so the figures compare.
const etcdTTL = 2 * time.Second

// etcdClient returns a quiet client on endpoints, closed at the end of tb.
func etcdClient(tb testing.TB, endpoints ...string) *clientv3.Client {
	tb.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cli.Close() })
	return cli
}

// etcdBackend returns an elector etcd Backend on cli, closed at the end of tb.
func etcdBackend(tb testing.TB, cli *clientv3.Client) *etcd.Backend {
	tb.Helper()
	b, err := etcd.New(cli, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// waitEtcdCandidates waits until n keys lie under dir: the waiter has
// written its candidate key (the layout of this module's driver and of
// concurrency.Election alike). It counts the keys once, then watches dir
// from that count's revision and counts again at each change.
func waitEtcdCandidates(tb testing.TB, cli *clientv3.Client, dir string, n int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, dir, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		tb.Fatal(err)
	}
	count := r.Count
	if count >= n {
		return
	}
	for wr := range cli.Watch(ctx, dir, clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1)) {
		for _, ev := range wr.Events {
			switch {
			case ev.Type == clientv3.EventTypeDelete:
				count--
			case ev.IsCreate():
				count++
			}
		}
		if count >= n {
			return
		}
	}
	tb.Fatalf("%s: %d candidates after 5s, want %d", dir, count, n)
}

// etcdName returns an election name unique to this run.
func etcdName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "etcd-it/" + prefix + "-" + hex.EncodeToString(b[:])
}

// etcdCtx returns a watchdog context for tb.
func etcdCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// raftLeader returns the 1-based member number (for testenv.Fault) of the
// etcd cluster's raft leader.
func raftLeader(t *testing.T, cli *clientv3.Client, endpoints []string) int {
	t.Helper()
	for i, ep := range endpoints {
		ctx, cancel := context.WithTimeout(etcdCtx(t), 10*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i + 1
		}
	}
	t.Fatal("no etcd member reports itself raft leader")
	return 0
}

// etcdEndpoints returns the endpoints of the three-member test cluster.
func etcdEndpoints(t testing.TB) []string { return testenv.EtcdEndpoints(t) }

// testLogger returns an elector logger writing to t's log until t ends.
func testLogger(t *testing.T) *slog.Logger {
	l := testenv.NewLogger(t)
	return slog.New(slog.NewTextHandler(logWriter{l}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type logWriter struct{ l *testenv.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.Printf("%s", strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// etcdBackendNoCleanup returns a Backend on cli that the caller closes.
// etcdPrefixBackend returns an elector etcd Backend on cli with a Prefix
// (one shared watch of the leases' keys), closed at the end of tb.
func etcdPrefixBackend(tb testing.TB, cli *clientv3.Client) *etcd.Backend {
	tb.Helper()
	b, err := etcd.New(cli, &etcd.Options{Prefix: "/elector-bench/"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

func etcdBackendNoCleanup(cli *clientv3.Client) *etcd.Backend {
	b, err := etcd.New(cli, nil)
	if err != nil {
		panic(err) // only for invalid options; there are none
	}
	return b
}
