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
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// queuedOn returns, per store, a check that a second candidate of election
// waits there behind the holder: on Redis, a majority of the nodes count a
// subscriber to the election's release channel (a redlock waiter
// subscribes before it retries); on etcd, two candidate keys; on
// ZooKeeper, two candidate znodes.
func queuedOn(b *testing.B, election string) map[string]func(context.Context) bool {
	clients := redlockClients(b)
	cli := etcdClient(b, etcdEndpoints(b)...)
	conn := zkConn(b, testenv.ZKServers(b), nil)
	return map[string]func(context.Context) bool{
		"redis": func(ctx context.Context) bool {
			n := 0
			for _, c := range clients {
				subs, err := c.PubSubNumSub(ctx, redlock.DefaultPrefix+election+"//released").Result()
				if err == nil && subs[redlock.DefaultPrefix+election+"//released"] > 0 {
					n++
				}
			}
			return n > len(clients)/2
		},
		"etcd": func(ctx context.Context) bool {
			resp, err := cli.Get(ctx, election+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			return err == nil && resp.Count >= 2
		},
		"zookeeper": func(context.Context) bool {
			kids, _, err := conn.Children(zkPrefix + "/" + election)
			return err == nil && len(kids) >= 2
		},
	}
}

// awaitQueued returns once every check in queued reports the waiter: the
// handoff then starts from a waiter visibly in line on each store, as a
// standby replica is. It is not part of the handoff metric.
func awaitQueued(b *testing.B, ctx context.Context, queued []func(context.Context) bool) {
	deadline := time.Now().Add(10 * migrateTTL)
	for _, q := range queued {
		for !q(ctx) {
			if time.Now().After(deadline) {
				b.Fatal("the waiter did not queue within 10 TTLs")
			}
			time.Sleep(time.Millisecond) // poll interval of an observed condition, not a settle time
		}
	}
}

// benchStores returns makers of one handle on each store the benchmarks use,
// each closed at the end of b.
func benchStores(b *testing.B) map[string]func() backend.Backend {
	return benchStoresAt(b, testenv.RedisAddrs(b), etcdEndpoints(b), testenv.ZKServers(b))
}

// benchStoresAt is benchStores on the given addresses of the Redis
// masters, the etcd endpoints and the ZooKeeper servers.
func benchStoresAt(b *testing.B, redisAddrs, endpoints, servers []string) map[string]func() backend.Backend {
	clients := redlockClientsAt(b, redisAddrs)
	cli := etcdClient(b, endpoints...)
	return map[string]func() backend.Backend{
		"redis": func() backend.Backend {
			// Under load a node may miss the default 100 ms.
			rb, err := redlock.New(clients, &redlock.Options{RequestTimeout: 500 * time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = rb.Close() })
			return rb
		},
		"etcd": func() backend.Backend { return etcdBackend(b, cli) },
		"zookeeper": func() backend.Backend {
			zb, err := zookeeper.New(servers, &zookeeper.Options{Prefix: zkPrefix})
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
// Campaign returning. The holder lets go once the waiter is visibly queued
// on every store it campaigns on (in PhaseBoth, both at once).
func BenchmarkMigrateHandoff(b *testing.B) {
	for _, tc := range migrateBenchCases {
		b.Run("store="+tc.name, func(b *testing.B) {
			stores := benchStores(b)
			c := backend.Candidate{Election: zkName("migrate-handoff"), Identity: "bench", TTL: migrateTTL}
			ctx := etcdCtx(b)
			checks := queuedOn(b, c.Election)
			queued := []func(context.Context) bool{checks[tc.new]}
			if tc.old != "" {
				queued = append(queued, checks[tc.old])
			}
			benchHandoff(b, ctx, benchBackend(b, stores, tc.old, tc.new), benchBackend(b, stores, tc.old, tc.new),
				c, func() { awaitQueued(b, ctx, queued) })
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

// linkDelay is the reply delay of the link=delayed cases: about a round
// trip between hosts in one zone, where the stores would run in production.
const linkDelay = time.Millisecond

// BenchmarkMigrateAcquireReleaseInterleaved measures, in each iteration
// and on separate elections, one acquire+release on Redis alone, one on the
// new store alone, one on both at once issued by hand (two goroutines, no
// migrate code) and one in PhaseBoth over both, so that a load that changes
// during the run weighs on them alike. It reports the p50 of each,
// both-over-sum: the p50 of PhaseBoth divided by the sum of the two stores'
// p50s (the target is at most 1), and both-over-parallel: PhaseBoth's p50
// divided by that of the hand-made concurrent pair, which is what PhaseBoth
// costs beyond talking to the two stores at once (on a host that runs both
// stores' servers and the client on 2 cores, the pair alone already costs
// about the sum: they compete for the same CPUs). Cases link=delayed reach
// every store through an in-process toxiproxy that delays each reply by
// linkDelay, as stores on other hosts would be: there the time goes into
// waiting rather than CPU, and talking to both stores at once pays off.
func BenchmarkMigrateAcquireReleaseInterleaved(b *testing.B) {
	for _, link := range []string{"loopback", "delayed"} {
		for _, newName := range []string{"etcd", "zookeeper"} {
			b.Run("link="+link+"/new="+newName, func(b *testing.B) {
				redisAddrs, endpoints, servers := testenv.RedisAddrs(b), etcdEndpoints(b), testenv.ZKServers(b)
				if link == "delayed" {
					redisAddrs = delayed(b, "redis", redisAddrs, linkDelay)
					endpoints = delayed(b, "etcd", endpoints, linkDelay)
					servers = delayed(b, "zookeeper", servers, linkDelay)
				}
				benchInterleaved(b, benchStoresAt(b, redisAddrs, endpoints, servers), newName)
			})
		}
	}
}

// benchInterleaved runs one case of BenchmarkMigrateAcquireReleaseInterleaved
// on stores, with newName the new store.
func benchInterleaved(b *testing.B, stores map[string]func() backend.Backend, newName string) {
	ctx := etcdCtx(b)
	old, nw := stores["redis"](), stores[newName]()
	both := benchBackend(b, stores, "redis", newName)
	cand := func(name string) backend.Candidate {
		return backend.Candidate{Election: zkName(name), Identity: "bench", TTL: migrateTTL}
	}
	co, cn, cb := cand("interleaved-old"), cand("interleaved-new"), cand("interleaved-both")
	cpo, cpn := cand("interleaved-pair-old"), cand("interleaved-pair-new")
	op := func(be backend.Backend, c backend.Candidate) error {
		l, err := be.Campaign(ctx, c)
		if err != nil {
			return err
		}
		return l.Release(ctx)
	}
	pair := func() error {
		var wg sync.WaitGroup
		var eo, en error
		wg.Go(func() { eo = op(old, cpo) })
		wg.Go(func() { en = op(nw, cpn) })
		wg.Wait()
		return errors.Join(eo, en)
	}
	cases := []struct {
		name string
		run  func() error
		ls   latencies
	}{
		{name: "redis", run: func() error { return op(old, co) }},
		{name: newName, run: func() error { return op(nw, cn) }},
		{name: "both", run: func() error { return op(both, cb) }},
		{name: "parallel", run: pair},
	}
	for b.Loop() {
		for i := range cases {
			start := time.Now()
			if err := cases[i].run(); err != nil {
				b.Fatal(err)
			}
			cases[i].ls = append(cases[i].ls, time.Since(start))
		}
	}
	p50 := make([]float64, len(cases))
	for i := range cases {
		cases[i].ls.report(b, cases[i].name)
		s := slices.Clone(cases[i].ls)
		slices.Sort(s)
		p50[i] = float64(s[len(s)/2])
	}
	b.ReportMetric(p50[2]/(p50[0]+p50[1]), "both-over-sum")
	b.ReportMetric(p50[2]/p50[3], "both-over-parallel")
}
