package integration_test

// Benchmarks of package migrate's PhaseBoth against each backend alone, in
// one run on the same servers, every lease with a 2 s TTL:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run '^$' -bench 'Migrate' -benchtime 40x -count 3 . | tee migrate.txt
//
// Sub-benchmarks: store=redis, store=etcd, store=zookeeper (each backend
// alone, through its driver), store=both-redis-etcd and
// store=both-redis-zookeeper (a migrate.Backend in PhaseBoth, Redis old).
// The targets of the migration issue: the "both" hand-over within twice the
// slower backend's alone, and "both" acquire+release at most the sum of the
// two backends' alone.

import (
	"slices"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

// migrateSettle is how long a waiter is given to queue before the holder
// lets go: past etcd's 100 ms watch sync loop, so every store's waiter is
// settled. It is not part of the handoff metric.
const migrateSettle = 150 * time.Millisecond

// benchStores returns makers of one handle on each store the benchmarks use,
// each closed at the end of b.
func benchStores(b *testing.B) map[string]func() backend.Backend {
	clients := redlockClients(b)
	cli := etcdClient(b, etcdEndpoints(b)...)
	servers := testenv.ZKServers(b)
	return map[string]func() backend.Backend{
		"redis": func() backend.Backend {
			// Under load a node may miss the default 100 ms.
			rb, err := redlock.New(clients, &redlock.Options{NodeTimeout: 500 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = rb.Close() })
			return rb
		},
		"etcd": func() backend.Backend { return etcdBackend(b, cli) },
		"zookeeper": func() backend.Backend {
			zb, err := zookeeper.New(servers, &zookeeper.Options{Root: zkRoot})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = zb.Close() })
			return zb
		},
	}
}

// migrateBenchCases lists the sub-benchmarks: a store alone, or PhaseBoth
// over Redis and another store.
var migrateBenchCases = []struct{ name, old, new string }{
	{"redis", "", "redis"},
	{"etcd", "", "etcd"},
	{"zookeeper", "", "zookeeper"},
	{"both-redis-etcd", "redis", "etcd"},
	{"both-redis-zookeeper", "redis", "zookeeper"},
}

// benchBackend returns one handle for a case: the store alone or a
// migrate.Backend in PhaseBoth.
func benchBackend(b *testing.B, stores map[string]func() backend.Backend, old, new string) backend.Backend {
	nb := stores[new]()
	if old == "" {
		return nb
	}
	mb, err := migrate.New(stores[old](), nb, migrate.PhaseBoth, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mb.Close() })
	return mb
}

// BenchmarkMigrateHandoff: a holder releases while a second handle waits;
// the handoff metric runs from the release returning to the waiter's
// Campaign returning. In PhaseBoth the waiter queues on Redis, then
// campaigns on the new store once it holds Redis.
func BenchmarkMigrateHandoff(b *testing.B) {
	for _, tc := range migrateBenchCases {
		b.Run("store="+tc.name, func(b *testing.B) {
			stores := benchStores(b)
			c := backend.Candidate{Election: zkName("migrate-handoff"), Identity: "bench", TTL: migrateTTL}
			benchHandoff(b, etcdCtx(b), benchBackend(b, stores, tc.old, tc.new), benchBackend(b, stores, tc.old, tc.new),
				c, func() { time.Sleep(migrateSettle) })
		})
	}
}

// BenchmarkMigrateAcquireRelease: one handle campaigns for a free election
// and releases it, b.N times.
func BenchmarkMigrateAcquireRelease(b *testing.B) {
	for _, tc := range migrateBenchCases {
		b.Run("store="+tc.name, func(b *testing.B) {
			stores := benchStores(b)
			c := backend.Candidate{Election: zkName("migrate-acquire"), Identity: "bench", TTL: migrateTTL}
			benchAcquireRelease(b, etcdCtx(b), benchBackend(b, stores, tc.old, tc.new), c)
		})
	}
}

// BenchmarkMigrateAcquireReleaseInterleaved measures, in each iteration
// and on separate elections, one acquire+release on Redis alone, one on the
// new store alone and one in PhaseBoth over both, so that a load that
// changes during the run weighs on the three alike. It reports the p50 of
// each and both-over-sum: the p50 of PhaseBoth divided by the sum of the
// two stores' p50s (the target is at most 1).
func BenchmarkMigrateAcquireReleaseInterleaved(b *testing.B) {
	for _, newName := range []string{"etcd", "zookeeper"} {
		b.Run("new="+newName, func(b *testing.B) {
			stores := benchStores(b)
			ctx := etcdCtx(b)
			old, nw := stores["redis"](), stores[newName]()
			both := benchBackend(b, stores, "redis", newName)
			cases := []struct {
				be backend.Backend
				c  backend.Candidate
				ls latencies
			}{
				{be: old, c: backend.Candidate{Election: zkName("interleaved-old"), Identity: "bench", TTL: migrateTTL}},
				{be: nw, c: backend.Candidate{Election: zkName("interleaved-new"), Identity: "bench", TTL: migrateTTL}},
				{be: both, c: backend.Candidate{Election: zkName("interleaved-both"), Identity: "bench", TTL: migrateTTL}},
			}
			for b.Loop() {
				for i := range cases {
					start := time.Now()
					l, err := cases[i].be.Campaign(ctx, cases[i].c)
					if err != nil {
						b.Fatal(err)
					}
					if err := l.Release(ctx); err != nil {
						b.Fatal(err)
					}
					cases[i].ls = append(cases[i].ls, time.Since(start))
				}
			}
			p50 := make([]float64, len(cases))
			for i, name := range []string{"redis", newName, "both"} {
				cases[i].ls.report(b, name)
				s := slices.Clone(cases[i].ls)
				slices.Sort(s)
				p50[i] = float64(s[len(s)/2])
			}
			b.ReportMetric(p50[2]/(p50[0]+p50[1]), "both-over-sum")
		})
	}
}
