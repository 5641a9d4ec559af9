package integration_test

// ZooKeeper benchmarks, side by side in one run with go-zookeeper's own
// zk.Lock recipe on the same three-server ensemble (ZooKeeper 3.8,
// 127.0.0.1:21811-21813, tickTime 100 ms), every session with a 2 s timeout
// (the TTL every side-by-side benchmark here uses, for every system, so the
// figures compare). With -zk.stock they run on the ensemble with
// ZooKeeper's stock timing (127.0.0.1:21815-21817, tickTime 2 s, syncLimit
// 5), every session 32 s: the zookeeper driver refuses a TTL below 30.25 s
// there. Every client of both libraries talks to the same server (the first
// one listed), so that neither gains from being connected to the ensemble
// leader:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run '^$' -bench 'ZooKeeper(AcquireRelease|Handoff)' -benchtime 100x -count 6 . | tee zk.txt
//	go test -run '^$' -bench 'ZooKeeperFailover' -benchtime 5x -count 6 . | tee -a zk.txt
//	benchstat -col /lib zk.txt
//
// Measured on the 2-core test machine (medians of 6; p50 per run):
// acquire+release 2.48 ms vs zk.Lock 2.87 ms; hand-over 0.50 ms vs 0.43 ms;
// crash failover from the holder's last heard-from-server instant 2489 ms vs
// 2488 ms (session timeout 2 s, server tickTime 500 ms).
//
// Each benchmark has sub-benchmarks lib=elector (package zookeeper, driver
// level: Campaign, Release) and lib=zklock (zk.NewLock, Lock, Unlock).

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// zkBenchServer is the one server every benchmark client uses: of ensemble
// 1-3, or with -zk.stock of the stock-timing ensemble.
func zkBenchServer(tb testing.TB) []string {
	if *zkStock {
		return testenv.ZKStockServers(tb)[:1]
	}
	return testenv.ZKServers(tb)[:1]
}

// BenchmarkZooKeeperAcquireRelease: one client acquires a free election (or
// lock) and releases it, b.N times; p50/p99 per acquire+release.
func BenchmarkZooKeeperAcquireRelease(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		zb := zkBackend(b, zkBenchServer(b), nil)
		benchAcquireRelease(b, zkCtx(b), zb, backend.Candidate{Election: zkName("acquire"), Identity: "bench", TTL: zkSessionTTL()})
	})
	b.Run("lib=zklock", func(b *testing.B) {
		lock := zk.NewLock(zkConn(b, zkBenchServer(b), nil), zkPrefix+"-zklock/"+zkName("acquire"), zk.WorldACL(zk.PermAll))
		ls := make(latencies, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if err := lock.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := lock.Unlock(); err != nil {
				b.Fatal(err)
			}
			ls = append(ls, time.Since(start))
		}
		ls.report(b, "op")
	})
}

// BenchmarkZooKeeperThroughput: 8 goroutines, each acquiring and
// releasing its own election (or lock), b.N operations in all; reports
// ops/s. Each side uses one session on the bench server.
func BenchmarkZooKeeperThroughput(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		zb := zkBackend(b, zkBenchServer(b), nil)
		benchThroughput(b, zkCtx(b), func() string { return zkName("tput") }, backendOp(zb, zkSessionTTL()))
	})
	b.Run("lib=zklock", func(b *testing.B) {
		conn := zkConn(b, zkBenchServer(b), nil)
		benchThroughput(b, zkCtx(b), func() string { return zkName("tput") }, func(_ context.Context, name string) error {
			lock := zk.NewLock(conn, zkPrefix+"-zklock/"+name, zk.WorldACL(zk.PermAll))
			if err := lock.Lock(); err != nil {
				return err
			}
			return lock.Unlock()
		})
	})
}

// BenchmarkZooKeeperHandoff: the holder releases while a waiter (another
// session) watches its predecessor; measures from the release returning to
// the waiter's acquire returning. The roles alternate. Waiting until the
// waiter has queued is not timed, so run it with a fixed count:
// -benchtime 100x.
func BenchmarkZooKeeperHandoff(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		srv := zkBenchServer(b)
		holder, waiter := zkBackend(b, srv, nil), zkBackend(b, srv, nil)
		admin := zkConn(b, srv, nil)
		c := backend.Candidate{Election: zkName("handoff"), Identity: "bench", TTL: zkSessionTTL()}
		benchHandoff(b, zkCtx(b), holder, waiter, c, func() {
			// The waiter watches the holder's znode (the holder may
			// watch it too, or only the election's children).
			waitZKWatched(b, srv[0], admin, zkPrefix+"/"+c.Election, 1)
		})
	})
	b.Run("lib=zklock", func(b *testing.B) {
		srv := zkBenchServer(b)
		admin := zkConn(b, srv, nil)
		path := zkPrefix + "-zklock/" + zkName("handoff")
		holder := zk.NewLock(zkConn(b, srv, nil), path, zk.WorldACL(zk.PermAll))
		waiter := zk.NewLock(zkConn(b, srv, nil), path, zk.WorldACL(zk.PermAll))
		if err := holder.Lock(); err != nil {
			b.Fatal(err)
		}
		ls := make(latencies, 0, b.N)
		b.ResetTimer()
		for range b.N {
			holder, waiter = waiter, holder
			got := make(chan error, 1)
			go func() { got <- holder.Lock() }()
			b.StopTimer()
			waitZKWatched(b, srv[0], admin, path, 1)
			b.StartTimer()
			if err := waiter.Unlock(); err != nil {
				b.Fatal(err)
			}
			released := time.Now()
			if err := <-got; err != nil {
				b.Fatal(err)
			}
			ls = append(ls, time.Since(released))
		}
		b.StopTimer()
		_ = holder.Unlock()
		ls.report(b, "handoff")
	})
}

// BenchmarkZooKeeperFailover: the holder's process crashes (its connection
// goes silent: no FIN, no close, so its session lives until it expires) while
// a waiter watches; measures from the last instant the holder heard from the
// server to the waiter's acquire returning. The floor is the 2 s session
// timeout (with -zk.stock, 32 s, and tick buckets of 2 s). Run it with
// -benchtime 5x.
func BenchmarkZooKeeperFailover(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		ctx := zkCtx(b)
		srv := zkBenchServer(b)
		admin := zkConn(b, srv, nil)
		waiter := zkBackend(b, srv, nil)
		ls := make(latencies, 0, b.N)
		for range b.N {
			b.StopTimer()
			c := backend.Candidate{Election: zkName("failover"), Identity: "bench", TTL: zkSessionTTL()}
			var d crashDialer
			holder := zkBackend(b, srv, d.dial)
			if _, err := holder.Campaign(ctx, c); err != nil {
				b.Fatal(err)
			}
			got := make(chan backend.Lease, 1)
			go func() {
				l, err := waiter.Campaign(ctx, c)
				if err != nil {
					b.Error(err)
				}
				got <- l
			}()
			// The waiter watches the holder's znode; the holder, elected
			// on the listing behind its create, watches the election's
			// children, not its own znode.
			waitZKWatched(b, srv[0], admin, zkPrefix+"/"+c.Election, 1)
			b.StartTimer()
			last := d.crash()
			l := <-got
			if l == nil {
				b.FailNow()
			}
			ls = append(ls, time.Since(last))
			b.StopTimer()
			_ = l.Release(ctx)
		}
		ls.report(b, "failover")
	})
	b.Run("lib=zklock", func(b *testing.B) {
		srv := zkBenchServer(b)
		admin := zkConn(b, srv, nil)
		waiterConn := zkConn(b, srv, nil)
		ls := make(latencies, 0, b.N)
		for range b.N {
			b.StopTimer()
			path := zkPrefix + "-zklock/" + zkName("failover")
			var d crashDialer
			holder := zk.NewLock(zkConn(b, srv, d.dial), path, zk.WorldACL(zk.PermAll))
			if err := holder.Lock(); err != nil {
				b.Fatal(err)
			}
			waiter := zk.NewLock(waiterConn, path, zk.WorldACL(zk.PermAll))
			got := make(chan error, 1)
			go func() { got <- waiter.Lock() }()
			waitZKWatched(b, srv[0], admin, path, 1)
			b.StartTimer()
			last := d.crash()
			if err := <-got; err != nil {
				b.Fatal(err)
			}
			ls = append(ls, time.Since(last))
			b.StopTimer()
			_ = waiter.Unlock()
		}
		ls.report(b, "failover")
	})
}
