package integration_test

// The scale benchmark: many elections held by one process on each
// backend, as Electors and, side by side on the same servers, as the peers
// hold them: etcd concurrency.Election on one shared Session, redsync with
// one Extend per mutex every TTL/3, go-zookeeper zk.Lock on one connection.
//
// Each run starts n holders at once and reports
//   - cold-s: seconds from the start to all n held;
//   - req/interval: backend requests per renew interval (TTL/3) in steady
//     state, from the servers' own counters (Redis INFO commandstats, per
//     node: script calls as req, every command a script runs as cmds; etcd
//     LeaseKeepAlive messages, and every gRPC message; ZooKeeper mntr
//     zk_packets_received, session pings included);
//   - cpu-%: process CPU time per wall second, in % of one core;
//   - B/election: live heap and stacks per held election (RSS beside it),
//     and stack-B/election: the stacks' share;
//   - goroutines/election: goroutines per held election, and for Electors
//     goroutines-beyond-run/election: those beyond each Elector's Run
//     goroutine (Run blocks in a goroutine of the caller's);
//   - renew-p99-ms: where each election renews on its own.
// Electors also check that no term ends, terms never overlap and tokens
// strictly increase.
//
// BenchmarkScale runs 10,000 elections with a 15 s TTL (make bench;
// -scale.n changes the number); TestScale runs 200 with a 6 s TTL and
// asserts the request ceilings (make test).

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

var scaleN = flag.Int("scale.n", 10000, "elections held at once by BenchmarkScale")

var scaleIntervals = flag.Int("scale.intervals", 2, "renew intervals (TTL/3) of steady state over which BenchmarkScale measures; more give a CPU profile more samples")

var scaleProfile = flag.String("scale.profile", "", "directory where BenchmarkScale writes, per case, a CPU profile of the steady state and heap and goroutine profiles at its end")

// scaleTTL is the lease TTL of BenchmarkScale: elector's default.
const scaleTTL = 15 * time.Second

// scaleCase is one way of holding n elections.
type scaleCase struct {
	name string
	// hold starts holding g.n elections with ttl, named prefix/0 …
	// prefix/n-1, reporting to g, until ctx ends or the function it returns
	// is called; that function waits for every holder to stop.
	hold func(tb testing.TB, ctx context.Context, g *scaleLedger, prefix string, ttl time.Duration) (stop func())
	// requests returns the store's cumulative request counters, by metric.
	requests func(tb testing.TB) map[string]func() float64
}

// scaleCases returns the elector and peer cases of every backend.
func scaleCases() []scaleCase {
	redisReq := func(tb testing.TB) map[string]func() float64 {
		return map[string]func() float64{
			"req/node/interval":  redisCommands(tb, true),
			"cmds/node/interval": redisCommands(tb, false),
		}
	}
	etcdReq := func(tb testing.TB) map[string]func() float64 {
		return map[string]func() float64{
			"keepalives/interval": etcdMessages(tb, func(m string) bool { return m == "LeaseKeepAlive" }),
			"req/interval":        etcdMessages(tb, func(string) bool { return true }),
		}
	}
	zkReq := func(tb testing.TB) map[string]func() float64 {
		return map[string]func() float64{"packets/interval": zkPackets(tb)}
	}
	return []scaleCase{
		{"redlock/elector", holdElectors(scaleRedlock), redisReq},
		{"redlock/redsync", holdRedsync, redisReq},
		{"etcd/elector", holdElectors(func(tb testing.TB) backend.Backend {
			// A Prefix, as the etcd package advises for many elections:
			// the leases share one watch of their keys.
			return etcdPrefixBackend(tb, etcdClient(tb, etcdEndpoints(tb)...))
		}), etcdReq},
		{"etcd/concurrency", holdEtcdElections, etcdReq},
		{"zookeeper/elector", holdElectors(func(tb testing.TB) backend.Backend {
			b, err := zookeeper.New(testenv.ZKServers(tb), &zookeeper.Options{Prefix: zkPrefix})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = b.Close() })
			return b
		}), zkReq},
		{"zookeeper/zklock", holdZKLocks, zkReq},
	}
}

// scaleRedlock returns a Redlock Backend for many elections: a pool of 256
// connections per node and a 1 s RequestTimeout, so that a cold start of
// thousands of campaigns at once queues for connections instead of timing
// out (a RequestTimeout of 1 s is still far below the 15 s TTL).
func scaleRedlock(tb testing.TB) backend.Backend {
	var cs []redis.UniversalClient
	for _, a := range testenv.RedisAddrs(tb) {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, PoolSize: 256})
		cs = append(cs, c)
		tb.Cleanup(func() { _ = c.Close() })
	}
	b, err := redlock.New(cs, &redlock.Options{NoPrefix: true, RequestTimeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// holdElectors holds each election with an Elector, all on one Backend.
func holdElectors(newBackend func(testing.TB) backend.Backend) func(testing.TB, context.Context, *scaleLedger, string, time.Duration) func() {
	return func(tb testing.TB, ctx context.Context, g *scaleLedger, prefix string, ttl time.Duration) func() {
		b := newBackend(tb)
		quiet := slog.New(slog.DiscardHandler)
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range g.n {
			e, err := elector.New(b, fmt.Sprintf("%s/%d", prefix, i), &elector.Options{
				Identity: "scale", TTL: ttl, Observer: g.observe, Logger: quiet,
			})
			if err != nil {
				tb.Fatal(err)
			}
			wg.Go(func() { _ = e.Run(ctx) })
		}
		return func() { cancel(); wg.Wait() }
	}
}

// runScale holds g.n elections with c, measures the steady state over
// intervals renew intervals, and reports the metrics on b (or logs them
// when b is nil).
func runScale(tb testing.TB, c scaleCase, n int, ttl time.Duration, intervals int) map[string]float64 {
	interval := ttl / 3
	counters := c.requests(tb)
	g := newScaleLedger(tb, n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	base := measure(true)
	start := time.Now()
	stop := c.hold(tb, ctx, g, scaleName(c.name), ttl)
	defer func() { g.stop(); stop() }()
	select {
	case <-g.all:
	case <-time.After(max(2*time.Minute, 20*ttl)):
		tb.Fatalf("%s: %d of %d elections held after %v (%d terms ended meanwhile)", c.name, g.count(), n, time.Since(start), g.lostCount())
	}
	m := map[string]float64{"cold-s": time.Since(start).Seconds()}
	if k, err := g.campaignErrors(); k > 0 {
		m["campaign-errors"] = float64(k)
		tb.Logf("%s: %d campaigns failed and were retried during the cold start; the first: %v", c.name, k, err)
	}
	// Let the renewals of the cold start settle into their steady rhythm.
	time.Sleep(interval)
	g.resetRenews()
	before := make(map[string]float64, len(counters))
	for k, f := range counters {
		before[k] = f()
	}
	u0 := measure(false)
	stopCPU := startProfile(tb, c.name)
	time.Sleep(time.Duration(intervals) * interval)
	stopCPU()
	u1 := measure(false)
	for k, f := range counters {
		m[k] = (f() - before[k]) / float64(intervals)
	}
	mem := measure(true)
	writeProfiles(tb, c.name)
	m["cpu-%"] = 100 * (u1.cpu - u0.cpu).Seconds() / u1.at.Sub(u0.at).Seconds()
	m["B/election"] = float64(int64(mem.heap)-int64(base.heap)) / float64(n)
	m["rss-B/election"] = float64(int64(mem.rss)-int64(base.rss)) / float64(n)
	m["stack-B/election"] = float64(int64(mem.stack)-int64(base.stack)) / float64(n)
	m["goroutines/election"] = float64(mem.goroutines-base.goroutines) / float64(n)
	if isElectorCase(c.name) {
		// Each Elector's Run blocks in a goroutine of the caller's: a floor
		// of one per election. What the library adds is beyond it.
		m["goroutines-beyond-run/election"] = m["goroutines/election"] - 1
	}
	if p, k := g.renewP99(); k > 0 {
		m["renew-p99-ms"] = float64(p) / float64(time.Millisecond)
	}
	if g.lostCount() > 0 {
		tb.Errorf("%s: %d terms ended during the benchmark, want none", c.name, g.lostCount())
	}
	return m
}

// BenchmarkScale holds -scale.n elections (default 10,000) with a 15 s TTL
// on each backend, as Electors and as the peers do, and reports the cost.
func BenchmarkScale(b *testing.B) {
	for _, c := range scaleCases() {
		b.Run(c.name, func(b *testing.B) {
			var m map[string]float64
			for range b.N { // one run is the measurement; N stays 1
				m = runScale(b, c, *scaleN, scaleTTL, *scaleIntervals)
			}
			for k, v := range m {
				b.ReportMetric(v, k)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestScale holds 200 elections with a 6 s TTL on each backend, as
// Electors: none is lost, terms never overlap, tokens increase, and the
// renewal traffic stays within scaleTargets, counted by the servers over
// three renew intervals. Not t.Parallel: the servers count every client's
// requests.
func TestScale(t *testing.T) {
	const n, ttl = 200, 6 * time.Second
	for _, c := range scaleCases() {
		if !isElectorCase(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			m := runScale(t, c, n, ttl, 3)
			t.Logf("%s, %d elections, TTL %v: %v", c.name, n, ttl, m)
			for k, limit := range scaleTargets(n)[c.name] {
				if m[k] > limit {
					t.Errorf("%s: %s = %.1f at %d elections, want at most %.1f: renewal traffic must not grow with the elections", c.name, k, m[k], n, limit)
				}
			}
		})
	}
}

// scaleTargets returns the renewal traffic allowed at n elections held with
// one TTL, per renew interval: Redis one script call per node per 1,000
// elections (a batch), plus two for the batches of a round's stragglers
// (renewals that began after a batch was sent cannot use it); etcd one keepalive per distinct TTL, plus one for a keepalive
// that a round's stragglers send; ZooKeeper, summed over the servers, the
// session's pings, its own reads when quiet for TTL/12 (a lease's Deadline
// counts an answer only once a later request sent TTL/4 after it was
// answered too, zookeeper/report.go) and the reads its Electors' renewals
// share, once per RenewInterval on a process-wide grid (lead.go
// trailingLease), however many elections. One renewal request per election
// would be some 400 Redis commands, 200 keepalives and 200 ZooKeeper
// packets at 200 elections.
func scaleTargets(n int) map[string]map[string]float64 {
	return map[string]map[string]float64{
		"redlock/elector":   {"req/node/interval": float64((n+999)/1000) + 2},
		"etcd/elector":      {"keepalives/interval": 2},
		"zookeeper/elector": {"packets/interval": 20},
	}
}

func isElectorCase(name string) bool { return strings.HasSuffix(name, "/elector") }

// scaleName returns a prefix of election names unique to this run.
func scaleName(c string) string {
	return zkName("scale-" + strings.ReplaceAll(c, "/", "-"))
}
