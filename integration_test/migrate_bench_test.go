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
	"fmt"
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

// awaitQueued returns once every check in queued reports true: the
// handoff then starts from waiters visibly in line, as standby replicas
// are. It is not part of the handoff metric.
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
// as a standby replica is (see standby).
func BenchmarkMigrateHandoff(b *testing.B) {
	for _, tc := range migrateBenchCases {
		b.Run("store="+tc.name, func(b *testing.B) {
			stores := benchStores(b)
			c := backend.Candidate{Election: zkName("migrate-handoff"), Identity: "bench", TTL: migrateTTL}
			ctx := etcdCtx(b)
			queued := standby(b, tc.old, tc.new, c.Election, 1)
			benchHandoff(b, ctx, benchBackend(b, stores, tc.old, tc.new), benchBackend(b, stores, tc.old, tc.new),
				c, func() { awaitQueued(b, ctx, queued) })
		})
	}
}

// standby returns the checks that n candidates of election wait as standby
// replicas do, behind a holder: on the store new alone, queued there; in
// PhaseBoth over old and new, queued on the old store and withdrawn from the
// new one, where only the holder is left (a PhaseBoth candidate campaigns
// on the new store only while it holds the old one, or during the first
// moments of its campaign).
func standby(b *testing.B, old, new, election string, n int) []func(context.Context) bool {
	waiting := waitingOn(b, new, election)
	if old == "" {
		return []func(context.Context) bool{func(ctx context.Context) bool { return waiting(ctx) >= n }}
	}
	oldWaiting := waitingOn(b, old, election)
	return []func(context.Context) bool{
		func(ctx context.Context) bool { return oldWaiting(ctx) >= n },
		func(ctx context.Context) bool { return waiting(ctx) == 0 },
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

// handoffWaiters is how many candidates wait while one holds in
// BenchmarkMigrateHandoffWaiters: a deployment's usual three replicas.
const handoffWaiters = 2

// standbyAge is how long every waiter of BenchmarkMigrateHandoffWaiters
// has campaigned when the holder lets go: longer than the 100 ms a
// PhaseBoth campaign takes part on the new store before it holds the old
// lease, so that the waiters are standbys, not candidates that have just
// started. It is the scenario, not a synchronisation.
const standbyAge = 150 * time.Millisecond

// BenchmarkMigrateHandoffWaiters: three candidates, each a handle with
// clients of its own as a replica has; one holds, the two others campaign.
// The holder lets go once both wait as standby replicas do (see standby)
// and have campaigned for standbyAge, and the handoff metric runs from its Release call to a
// waiter's Campaign returning: the time with no leader. The released handle
// then campaigns again. The target: in PhaseBoth, p50 within twice the
// slower store's alone and p99 below the renew interval (a third of the
// TTL).
//
//	go test -run '^$' -bench 'MigrateHandoffWaiters' -benchtime 30x -count 6 . | tee waiters.txt
//
// Sub-benchmarks: store=redis, store=etcd, store=both-redis-etcd; the
// ZooKeeper cases run with -bench 'MigrateHandoffWaiters/.*zookeeper'.
func BenchmarkMigrateHandoffWaiters(b *testing.B) {
	for _, tc := range migrateBenchCases {
		b.Run("store="+tc.name, func(b *testing.B) {
			election := zkName("migrate-waiters")
			settled := standby(b, tc.old, tc.new, election, handoffWaiters)
			hs := make([]backend.Backend, handoffWaiters+1)
			for i := range hs {
				hs[i] = benchHandle(b, tc.old, tc.new)
			}
			benchHandoffWaiters(b, etcdCtx(b), hs, election, func(ctx context.Context) { awaitQueued(b, ctx, settled) })
		})
	}
}

// benchHandoffWaiters runs BenchmarkMigrateHandoffWaiters on handles hs:
// hs[0] holds first; settle returns once the others wait as standbys do.
func benchHandoffWaiters(b *testing.B, ctx context.Context, hs []backend.Backend, election string, settle func(context.Context)) {
	type win struct {
		i  int
		l  backend.Lease
		at time.Time
	}
	wins := make(chan win, len(hs))
	campaign := func(i int) {
		c := backend.Candidate{Election: election, Identity: fmt.Sprintf("replica-%d", i), TTL: migrateTTL}
		l, err := hs[i].Campaign(ctx, c)
		if err != nil {
			b.Error(err)
			wins <- win{i: -1}
			return
		}
		wins <- win{i, l, time.Now()}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	campaign(0)
	holder := <-wins
	if holder.i < 0 {
		b.FailNow()
	}
	for i := 1; i < len(hs); i++ {
		wg.Go(func() { campaign(i) })
	}
	launched := time.Now()
	ls := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		settle(ctx)
		time.Sleep(standbyAge - time.Since(launched))
		b.StartTimer()
		release := time.Now()
		if err := holder.l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		next := <-wins
		if next.i < 0 {
			b.FailNow()
		}
		ls = append(ls, next.at.Sub(release))
		wg.Go(func() { campaign(holder.i) })
		launched = time.Now()
		holder = next
	}
	b.StopTimer()
	ls.report(b, "handoff")
	// The waiters win in turn as each holder lets go.
	_ = holder.l.Release(ctx)
	for range len(hs) - 1 {
		if w := <-wins; w.i >= 0 {
			_ = w.l.Release(ctx)
		}
	}
}

// benchHandle returns one replica's handle for a case of
// migrateBenchCases, on clients of its own: the store new alone, or a
// migrate.Backend in PhaseBoth over old and new.
func benchHandle(b *testing.B, old, new string) backend.Backend {
	nb := benchStore(b, new)
	if old == "" {
		return nb
	}
	mb, err := migrate.New(benchStore(b, old), nb, migrate.PhaseBoth, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = mb.Close() })
	return mb
}

// benchStore returns a handle on the store kind ("redis", "etcd" or
// "zookeeper") with clients of its own, closed at the end of b.
func benchStore(b *testing.B, kind string) backend.Backend {
	switch kind {
	case "redis":
		// Under load a node may miss the default 100 ms.
		rb, err := redlock.New(redlockClients(b), &redlock.Options{RequestTimeout: 500 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = rb.Close() })
		return rb
	case "etcd":
		return etcdBackend(b, etcdClient(b, etcdEndpoints(b)...))
	case "zookeeper":
		return zkBackend(b, testenv.ZKServers(b), nil)
	}
	b.Fatalf("benchStore: unknown store %q", kind)
	return nil
}

// waitingOn returns a count of the candidates of election that wait on
// the store kind behind its holder: on Redis, the subscribers to the
// election's release channel that a majority of the nodes count (a redlock
// waiter subscribes before it retries); on etcd and ZooKeeper, the
// candidate keys or znodes beyond the holder's.
func waitingOn(b *testing.B, kind, election string) func(context.Context) int {
	switch kind {
	case "redis":
		clients := redlockClients(b)
		channel := redlock.DefaultPrefix + election + "//released"
		return func(ctx context.Context) int {
			var counts []int
			for _, c := range clients {
				subs, err := c.PubSubNumSub(ctx, channel).Result()
				if err == nil {
					counts = append(counts, int(subs[channel]))
				}
			}
			if len(counts) <= len(clients)/2 {
				return 0
			}
			slices.Sort(counts)
			return counts[len(counts)-(len(clients)/2+1)] // reached by a majority
		}
	case "etcd":
		cli := etcdClient(b, etcdEndpoints(b)...)
		return func(ctx context.Context) int {
			resp, err := cli.Get(ctx, election+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				return 0
			}
			return max(int(resp.Count)-1, 0)
		}
	case "zookeeper":
		conn := zkConn(b, testenv.ZKServers(b), nil)
		return func(context.Context) int {
			kids, _, err := conn.Children(zkPrefix + "/" + election)
			if err != nil {
				return 0
			}
			return max(len(kids)-1, 0)
		}
	}
	b.Fatalf("waitingOn: unknown store %q", kind)
	return nil
}
