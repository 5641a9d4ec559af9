package integration_test

// Redlock benchmarks, side by side in one run with redsync v4 on the same
// five Redis masters (127.0.0.1:7001-7005, no persistence), every lock with
// the 2 s TTL every side-by-side benchmark here
// uses, for every system:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run '^$' -bench 'Redlock' -count 6 . | tee redlock.txt
//	benchstat -col /lib redlock.txt
//
// Each benchmark has sub-benchmarks lib=elector (package redlock, driver
// level: Campaign, Renew, Release) and lib=redsync (Lock, Extend, Unlock).

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// BenchmarkRedlockAcquireRelease: one client acquires a free lock and
// releases it, b.N times; ns/op is the mean, p50/p99 per operation.
func BenchmarkRedlockAcquireRelease(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		c := backend.Candidate{Election: redlockName("acq"), Identity: "bench", TTL: redlockTTL}
		benchAcquireRelease(b, redlockCtx(b), newRedlock(b), c)
	})
	b.Run("lib=redsync", func(b *testing.B) {
		rs := newRedlockRedsync(b)
		ctx := redlockCtx(b)
		name := redlockName("acq")
		ls := make(latencies, 0, b.N)
		b.ResetTimer()
		for b.Loop() {
			start := time.Now()
			m := rs.NewMutex(name, redsync.WithExpiry(redlockTTL), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				b.Fatal(err)
			}
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				b.Fatal(ok, err)
			}
			ls = append(ls, time.Since(start))
		}
		ls.report(b, "op")
	})
}

// BenchmarkRedlockThroughput: 8 goroutines, each acquiring and releasing its
// own election, b.N operations in all; reports ops/s.
func BenchmarkRedlockThroughput(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		benchThroughput(b, redlockCtx(b), func() string { return redlockName("tput") }, backendOp(newRedlock(b), redlockTTL))
	})
	b.Run("lib=redsync", func(b *testing.B) {
		rs := newRedlockRedsync(b)
		benchThroughput(b, redlockCtx(b), func() string { return redlockName("tput") }, func(ctx context.Context, name string) error {
			m := rs.NewMutex(name, redsync.WithExpiry(redlockTTL), redsync.WithTries(1))
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			_, err := m.UnlockContext(ctx)
			return err
		})
	})
}

// waitRedlockWaiting returns once a waiter for election through a Backend of
// this package is subscribed to its release channel on every node (PUBSUB
// NUMSUB), which it does after its first failed attempt, right before it
// waits.
func waitRedlockWaiting(tb testing.TB, nodes []redis.UniversalClient, election string) {
	tb.Helper()
	channel := election + "//released" // redlock's channel: lock key + "//released"
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		subscribed := 0
		for _, c := range nodes {
			n, err := c.PubSubNumSub(context.Background(), channel).Result()
			if err != nil {
				tb.Fatal(err)
			}
			if n[channel] > 0 {
				subscribed++
			}
		}
		if subscribed == len(nodes) {
			return
		}
		if time.Now().After(end) {
			tb.Fatalf("%s: waiter subscribed on %d nodes after 5s", channel, subscribed)
		}
	}
}

// waitRedisCalls returns once node 0 has run more cmd commands (those run
// by scripts included) than before: for "set", a redsync waiter has made its
// first (failed) attempt and retries after its own delay from then on; for
// "subscribe", a Backend of this package has subscribed to a release
// channel after a failed attempt and waits.
func waitRedisCalls(tb testing.TB, cmd string, before float64) {
	tb.Helper()
	for end := time.Now().Add(5 * time.Second); redisCalls(tb, cmd) <= before; time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			tb.Fatalf("no %s on node 0 after 5s", cmd)
		}
	}
}

// redisCalls reads how many cmd commands node 0 has run.
func redisCalls(tb testing.TB, cmd string) float64 {
	return redisCounts(tb, testenv.RedisAddrs(tb)[:1])[cmd]
}

// BenchmarkRedlockHandoff: a holder releases while a second client waits;
// the handoff metric runs from the holder's release returning to the
// waiter's acquire returning.
func BenchmarkRedlockHandoff(b *testing.B) {
	b.Run("lib=elector", func(b *testing.B) {
		c := backend.Candidate{Election: redlockName("handoff"), Identity: "bench", TTL: redlockTTL}
		nodes := redlockClients(b)
		benchHandoff(b, redlockCtx(b), newRedlock(b), newRedlock(b), c, func() { waitRedlockWaiting(b, nodes, c.Election) })
	})
	b.Run("lib=redsync", func(b *testing.B) {
		rs := newRedlockRedsync(b)
		ctx := redlockCtx(b)
		name := redlockName("handoff")
		opts := []redsync.Option{redsync.WithExpiry(redlockTTL)} // default tries (32) and retry delay (50-250 ms)
		ls := make(latencies, 0, b.N)
		m := rs.NewMutex(name, opts...)
		if err := m.LockContext(ctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			got := make(chan *redsync.Mutex, 1)
			b.StopTimer()
			sets := redisCalls(b, "set")
			go func() {
				wm := rs.NewMutex(name, opts...)
				if err := wm.LockContext(ctx); err != nil {
					b.Error(err)
					wm = nil
				}
				got <- wm
			}()
			waitRedisCalls(b, "set", sets)
			b.StartTimer()
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				b.Fatal(ok, err)
			}
			released := time.Now()
			m = <-got
			if m == nil {
				b.FailNow()
			}
			ls = append(ls, time.Since(released))
		}
		b.StopTimer()
		_, _ = m.UnlockContext(ctx)
		ls.report(b, "handoff")
	})
}

// redlockFailoverElections is how many elections each failover iteration runs at
// once, each with its own crashed holder and waiter, for more samples per
// TTL spent.
const redlockFailoverElections = 8

// BenchmarkRedlockFailover: a holder renews once and then stops (a crash);
// measures from the start of its last successful renewal to the waiter's
// acquire returning. The floor is the TTL (2000 ms).
func BenchmarkRedlockFailover(b *testing.B) {
	run := func(b *testing.B, one func(ctx context.Context, name string) (time.Duration, error)) {
		ctx := redlockCtx(b)
		var ls latencies
		var mu sync.Mutex
		for range b.N {
			var wg sync.WaitGroup
			for range redlockFailoverElections {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := one(ctx, redlockName("failover"))
					if err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					ls = append(ls, d)
					mu.Unlock()
				}()
			}
			wg.Wait()
		}
		ls.report(b, "failover")
	}
	b.Run("lib=elector", func(b *testing.B) {
		holder, waiter := newRedlock(b), newRedlock(b)
		run(b, func(ctx context.Context, name string) (time.Duration, error) {
			l, err := holder.Campaign(ctx, backend.Candidate{Election: name, Identity: "h", TTL: redlockTTL})
			if err != nil {
				return 0, err
			}
			renewed := time.Now()
			if err := l.Renew(ctx); err != nil {
				return 0, err
			}
			// The holder "crashes": no more renewals, no release.
			wl, err := waiter.Campaign(ctx, backend.Candidate{Election: name, Identity: "w", TTL: redlockTTL})
			if err != nil {
				return 0, err
			}
			d := time.Since(renewed)
			return d, wl.Release(ctx)
		})
	})
	b.Run("lib=redsync", func(b *testing.B) {
		rs := newRedlockRedsync(b)
		run(b, func(ctx context.Context, name string) (time.Duration, error) {
			opts := []redsync.Option{redsync.WithExpiry(redlockTTL)}
			m := rs.NewMutex(name, opts...)
			if err := m.LockContext(ctx); err != nil {
				return 0, err
			}
			renewed := time.Now()
			if ok, err := m.ExtendContext(ctx); !ok || err != nil {
				return 0, err
			}
			wm := rs.NewMutex(name, opts...)
			if err := wm.LockContext(ctx); err != nil {
				return 0, err
			}
			d := time.Since(renewed)
			_, err := wm.UnlockContext(ctx)
			return d, err
		})
	})
}
