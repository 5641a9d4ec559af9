package integration_test

// The Redis renewal probe: the renewal script calls of many default
// Electors on one Backend opened from a URL, counted by the servers.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/internal/testenv"
	_ "github.com/leaderkit/elector/redlock" // redis:// URLs
)

// BenchmarkRedisRenewals starts -scale.n default Electors (TTL 15 s) at
// once on one Backend from backendurl.Open over the five test masters, as a
// user would, waits until all are held and one renew interval more, then
// counts the script calls (EVAL*, FCALL*: INFO commandstats, summed over
// the masters) during 15 s of steady state. It reports calls per node per
// renew interval, and that per 1,000 held elections, which must stay at or
// below 1 in every run whatever the start pattern: the renewals of one
// Backend share batched calls.
func BenchmarkRedisRenewals(b *testing.B) {
	n := *scaleN
	var perK float64
	for range b.N { // one run is the measurement; N stays 1
		perNode := redisRenewalProbe(b, n)
		perK = perNode / (float64(n) / 1000)
		b.ReportMetric(perNode, "calls/node/interval")
		b.ReportMetric(perK, "calls/node/interval/1000-elections")
		b.ReportMetric(0, "ns/op")
	}
	if perK > 1 {
		b.Errorf("%.2f script calls per node per renew interval per 1,000 held elections, want at most 1: renewals of one Backend share batched calls", perK)
	}
}

// redisRenewalProbe runs the probe with n Electors and returns the script
// calls per node per renew interval in steady state.
func redisRenewalProbe(tb testing.TB, n int) float64 {
	const ttl = 15 * time.Second // the default
	interval := ttl / 3
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bk, closer, err := backendurl.Open(ctx, "redis://"+strings.Join(testenv.RedisAddrs(tb), ","))
	if err != nil {
		tb.Fatal(err)
	}
	defer closer.Close()
	g := newScaleLedger(tb, n)
	calls := redisCommands(tb, true)
	prefix := scaleName("renewals")
	quiet := slog.New(slog.DiscardHandler)
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { g.stop(); stop(); wg.Wait() }()
	start := time.Now()
	for i := range n {
		e, err := elector.New(bk, fmt.Sprintf("%s/%d", prefix, i), &elector.Options{Observer: g.observe, Logger: quiet})
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(rctx) })
	}
	select {
	case <-g.all:
	case <-time.After(5 * time.Minute):
		tb.Fatalf("%d of %d elections held after %v", g.count(), n, time.Since(start))
	}
	tb.Logf("%d elections held after %v", n, time.Since(start).Round(time.Millisecond))
	time.Sleep(interval)
	before := calls()
	const window = 15 * time.Second
	time.Sleep(window)
	perNode := (calls() - before) / float64(window/interval)
	if k := g.lostCount(); k > 0 {
		tb.Errorf("%d terms ended during the probe, want none", k)
	}
	return perNode
}
