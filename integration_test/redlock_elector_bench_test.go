package integration_test

// Elector-level Redlock benchmarks: the same hand-over and failover as in
// redlock_bench_test.go, measured through the portable layer as a user sees
// them (elector.Run, Resign, OnElected). redsync has no counterpart.

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/redlock"
)

// redlockWin is one OnElected call.
type redlockWin struct {
	e  *elector.Elector
	at time.Time
}

// newRedlockElector returns an Elector on a Backend over clients, reporting each
// OnElected on wins and each event to observe (if not nil).
func newRedlockElector(b *testing.B, clients []redis.UniversalClient, name, id string, wins chan<- redlockWin, observe func(elector.Event)) *elector.Elector {
	b.Helper()
	rl, err := redlock.New(clients, &redlock.Options{NoPrefix: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rl.Close() })
	var self *elector.Elector
	e, err := elector.New(rl, name, &elector.Options{
		Identity: id,
		TTL:      redlockTTL,
		OnElected: func(ctx context.Context, _ elector.Term) {
			wins <- redlockWin{self, time.Now()}
			<-ctx.Done()
		},
		Observer: observe,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	self = e
	return e
}

// runRedlockElector runs e until ctx ends; wait for it with wg.
func runRedlockElector(ctx context.Context, wg *sync.WaitGroup, e *elector.Elector) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = e.Run(ctx)
	}()
}

// BenchmarkRedlockElectorHandoff: the leader calls Resign; the handoff metric
// runs from the call to the other elector's OnElected.
func BenchmarkRedlockElectorHandoff(b *testing.B) {
	ctx, cancel := context.WithCancel(redlockCtx(b))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	name := redlockName("elector-handoff")
	wins := make(chan redlockWin, 4)
	runRedlockElector(ctx, &wg, newRedlockElector(b, redlockClients(b), name, "a", wins, nil))
	runRedlockElector(ctx, &wg, newRedlockElector(b, redlockClients(b), name, "b", wins, nil))
	leader := (<-wins).e
	ls := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		subscribed := redisCalls(b, "subscribe")
		resign := time.Now()
		if err := leader.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		w := <-wins
		ls = append(ls, w.at.Sub(resign))
		leader = w.e
		// Let the resigned elector see its successor and wait for it
		// again (subscribed to its releases) before the successor resigns.
		b.StopTimer()
		waitRedisCalls(b, "subscribe", subscribed)
		b.StartTimer()
	}
	b.StopTimer()
	ls.report(b, "handoff")
}

// BenchmarkRedlockElectorFailover: the leader's process "crashes" right
// after a successful renewal (its Redis clients are closed: no more
// renewals, no release); measures from the start of that renewal to the
// other elector's OnElected. The floor is the TTL (2000 ms).
func BenchmarkRedlockElectorFailover(b *testing.B) {
	var ls latencies
	for range b.N {
		ctx, cancel := context.WithCancel(redlockCtx(b))
		var wg sync.WaitGroup
		name := redlockName("elector-failover")
		wins := make(chan redlockWin, 4)
		renewed := make(chan time.Time, 16)
		observe := func(ev elector.Event) {
			if ev.Kind == elector.EventRenew && ev.Err == nil {
				select {
				case renewed <- time.Now().Add(-ev.Took):
				default:
				}
			}
		}
		crashClients := redlockClients(b)
		runRedlockElector(ctx, &wg, newRedlockElector(b, crashClients, name, "crash", wins, observe))
		<-wins
		runRedlockElector(ctx, &wg, newRedlockElector(b, redlockClients(b), name, "next", wins, nil))
		last := <-renewed
		for _, c := range crashClients {
			_ = c.Close()
		}
		w := <-wins
		ls = append(ls, w.at.Sub(last))
		cancel()
		wg.Wait()
	}
	ls.report(b, "failover")
}
