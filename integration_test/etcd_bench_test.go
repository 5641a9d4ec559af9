package integration_test

// etcd benchmarks, side by side in one run with the etcd client's own
// concurrency.Election on the same three-member cluster (Debian etcd 3.4,
// 127.0.0.1:23791-23793), every lease with the 2 s TTL every side-by-side benchmark
// here uses, for every system:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run '^$' -bench 'Etcd(CampaignResign|Failover)' -count 6 . | tee etcd.txt
//	go test -run '^$' -bench 'EtcdHandoff' -benchtime 60x -count 6 . | tee -a etcd.txt
//	benchstat -col /lib etcd.txt
//
// Each benchmark has sub-benchmarks lib=elector (package etcd, driver level:
// Campaign, Renew, Release), lib=elector-prefix (the same with
// Options.Prefix set, where the leases share one watch of their keys
// instead of one each) and lib=concurrency (Session, Election, which does
// not watch its own key).

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/backend"
)

// etcdSettles are the ages of the waiter when the holder lets go: how long
// after its candidate key appeared (the timer is stopped meanwhile). They
// are the scenario, not a synchronisation: etcd moves a watch that starts
// at a past revision to its synced set from a loop that runs every 100 ms,
// and until then its events wait for that loop. So the short age shows a
// hand-over that closely follows the waiter's campaign, the long one a
// waiter that has been waiting a while.
var etcdSettles = []time.Duration{20 * time.Millisecond, 150 * time.Millisecond}

// etcdFailoverElections is how many elections each failover iteration runs
// at once, each with its own crashed holder and waiter.
const etcdFailoverElections = 8

// BenchmarkEtcdCampaignResign: one client campaigns for a free election and
// resigns, b.N times; p50/p99 per campaign+resign.
func BenchmarkEtcdCampaignResign(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		eb := etcdBackend(b, etcdClient(b, etcdEndpoints(b)...))
		c := backend.Candidate{Election: etcdName("campaign"), Identity: "bench", TTL: etcdTTL}
		benchAcquireRelease(b, etcdCtx(b), eb, c)
	})
	b.Run("lib=elector-prefix", func(b *testing.B) {
		eb := etcdPrefixBackend(b, etcdClient(b, etcdEndpoints(b)...))
		c := backend.Candidate{Election: etcdName("campaign"), Identity: "bench", TTL: etcdTTL}
		benchAcquireRelease(b, etcdCtx(b), eb, c)
	})
	b.Run("lib=concurrency", func(b *testing.B) {
		s := etcdSession(b, etcdClient(b, etcdEndpoints(b)...))
		ctx := etcdCtx(b)
		e := concurrency.NewElection(s, etcdName("campaign"))
		ls := make(latencies, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			if err := e.Campaign(ctx, "bench"); err != nil {
				b.Fatal(err)
			}
			if err := e.Resign(ctx); err != nil {
				b.Fatal(err)
			}
			ls = append(ls, time.Since(start))
		}
		ls.report(b, "op")
	})
}

// BenchmarkEtcdThroughput: 8 goroutines, each campaigning for its own
// election and resigning, b.N operations in all; reports ops/s. Each side
// uses one client and one lease (elector: one Backend; concurrency: one
// Session shared by the eight Elections).
func BenchmarkEtcdThroughput(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		eb := etcdBackend(b, etcdClient(b, etcdEndpoints(b)...))
		benchThroughput(b, etcdCtx(b), func() string { return etcdName("tput") }, backendOp(eb, etcdTTL))
	})
	b.Run("lib=elector-prefix", func(b *testing.B) {
		eb := etcdPrefixBackend(b, etcdClient(b, etcdEndpoints(b)...))
		benchThroughput(b, etcdCtx(b), func() string { return etcdName("tput") }, backendOp(eb, etcdTTL))
	})
	b.Run("lib=concurrency", func(b *testing.B) {
		s := etcdSession(b, etcdClient(b, etcdEndpoints(b)...))
		benchThroughput(b, etcdCtx(b), func() string { return etcdName("tput") }, func(ctx context.Context, name string) error {
			e := concurrency.NewElection(s, name)
			if err := e.Campaign(ctx, "bench"); err != nil {
				return err
			}
			return e.Resign(ctx)
		})
	})
}

// BenchmarkEtcdHandoff: the holder releases while a waiter (another client)
// watches; measures from the release returning to the waiter's Campaign
// returning. The roles alternate. Run it with a fixed count, since the
// settle time is not timed: -benchtime 60x.
func BenchmarkEtcdHandoff(b *testing.B) {
	for _, settle := range etcdSettles {
		b.Run("settle="+settle.String(), func(b *testing.B) { benchEtcdHandoff(b, settle) })
	}
}

func benchEtcdHandoff(b *testing.B, settle time.Duration) {
	b.Run("lib=elector", func(b *testing.B) {
		eps := etcdEndpoints(b)
		holder, waiter := etcdBackend(b, etcdClient(b, eps...)), etcdBackend(b, etcdClient(b, eps...))
		c := backend.Candidate{Election: etcdName("handoff"), Identity: "bench", TTL: etcdTTL}
		admin := etcdClient(b, eps...)
		benchHandoff(b, etcdCtx(b), holder, waiter, c, func() {
			waitEtcdCandidates(b, admin, c.Election+"/", 2)
			time.Sleep(settle)
		})
	})
	b.Run("lib=concurrency", func(b *testing.B) {
		ctx := etcdCtx(b)
		eps := etcdEndpoints(b)
		name := etcdName("handoff")
		admin := etcdClient(b, eps...)
		holder := concurrency.NewElection(etcdSession(b, etcdClient(b, eps...)), name)
		waiter := concurrency.NewElection(etcdSession(b, etcdClient(b, eps...)), name)
		if err := holder.Campaign(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
		ls := make(latencies, 0, b.N)
		b.ResetTimer()
		for range b.N {
			got := make(chan error, 1)
			go func() { got <- waiter.Campaign(ctx, "bench") }()
			b.StopTimer()
			waitEtcdCandidates(b, admin, name+"/", 2)
			time.Sleep(settle)
			b.StartTimer()
			if err := holder.Resign(ctx); err != nil {
				b.Fatal(err)
			}
			released := time.Now()
			if err := <-got; err != nil {
				b.Fatal(err)
			}
			ls = append(ls, time.Since(released))
			holder, waiter = waiter, holder
		}
		b.StopTimer()
		_ = holder.Resign(ctx)
		ls.report(b, "handoff")
	})
}

// BenchmarkEtcdFailover: a holder sends one last keepalive and then crashes
// (its client is closed: no more keepalives, no release); measures from the
// send time of that last acknowledged keepalive to the waiter's Campaign
// returning. The floor is the TTL (2000 ms); etcd checks for expired leases
// every 500 ms.
func BenchmarkEtcdFailover(b *testing.B) {
	run := func(b *testing.B, one func(ctx context.Context, name string) (time.Duration, error)) {
		ctx := etcdCtx(b)
		var (
			ls latencies
			mu sync.Mutex
		)
		for range b.N {
			var wg sync.WaitGroup
			for range etcdFailoverElections {
				wg.Go(func() {
					d, err := one(ctx, etcdName("failover"))
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					ls = append(ls, d)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
		ls.report(b, "failover")
	}
	b.Run("lib=elector", func(b *testing.B) {
		eps := etcdEndpoints(b)
		waiter := etcdBackend(b, etcdClient(b, eps...))
		run(b, func(ctx context.Context, name string) (time.Duration, error) {
			cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return 0, err
			}
			holder := etcdBackendNoCleanup(cli)
			c := backend.Candidate{Election: name, Identity: "h", TTL: etcdTTL}
			l, err := holder.Campaign(ctx, c)
			if err != nil {
				return 0, err
			}
			renewed := time.Now()
			if err := l.Renew(ctx); err != nil {
				return 0, err
			}
			_ = cli.Close() // the crash
			defer holder.Close()
			wl, err := waiter.Campaign(ctx, backend.Candidate{Election: name, Identity: "w", TTL: etcdTTL})
			if err != nil {
				return 0, err
			}
			d := time.Since(renewed)
			return d, wl.Release(ctx)
		})
	})
	b.Run("lib=concurrency", func(b *testing.B) {
		eps := etcdEndpoints(b)
		ws := etcdSession(b, etcdClient(b, eps...))
		run(b, func(ctx context.Context, name string) (time.Duration, error) {
			cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return 0, err
			}
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(etcdTTL/time.Second)))
			if err != nil {
				return 0, err
			}
			if err := concurrency.NewElection(s, name).Campaign(ctx, "h"); err != nil {
				return 0, err
			}
			// The session keeps the lease alive in the background; send
			// one keepalive of our own to know when the last one went out.
			renewed := time.Now()
			if _, err := cli.KeepAliveOnce(ctx, s.Lease()); err != nil {
				return 0, err
			}
			_ = cli.Close() // the crash
			w := concurrency.NewElection(ws, name)
			if err := w.Campaign(ctx, "w"); err != nil {
				return 0, err
			}
			d := time.Since(renewed)
			return d, w.Resign(ctx)
		})
	})
}

// etcdSession returns a concurrency session with the benchmark TTL, closed
// at the end of tb.
func etcdSession(tb testing.TB, cli *clientv3.Client) *concurrency.Session {
	tb.Helper()
	s, err := concurrency.NewSession(cli, concurrency.WithTTL(int(etcdTTL/time.Second)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}
