package elector

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// holdElections starts n Electors of elections prefix/0 … on b, whose
// OnElected returns at once, and waits until every one leads. The
// function it returns stops them and waits for their Run to return.
func holdElections(tb testing.TB, b backend.Backend, prefix string, n int, ttl time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var elected atomic.Int32
	all := make(chan struct{})
	quiet := slog.New(slog.DiscardHandler)
	for i := range n {
		e, err := New(b, fmt.Sprintf("%s/%d", prefix, i), &Options{
			Identity: "cost", TTL: ttl, Logger: quiet,
			OnElected: func(context.Context, Term) {
				if elected.Add(1) == int32(n) {
					close(all)
				}
			},
		})
		if err != nil {
			tb.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}
	select {
	case <-all:
	case <-time.After(time.Minute):
		tb.Fatalf("%d of %d elections held after a minute", elected.Load(), n)
	}
	return func() { cancel(); wg.Wait() }
}

// TestCostPerElection: a held election whose OnElected has returned costs
// no goroutine beyond its Run's, whatever the number of elections: its
// renewals and step-down point are the term engine's, which runs every term
// of a Backend on a few goroutines.
func TestCostPerElection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1000
		store := memory.New()
		defer store.Close()
		before := runtime.NumGoroutine()
		stop := holdElections(t, store, "cost", n, ttl)
		time.Sleep(3 * ttl) // fake time: renewals running
		synctest.Wait()
		extra := runtime.NumGoroutine() - before - n // beyond the Run goroutines
		t.Logf("%d elections held: %d goroutines beyond their Run's", n, extra)
		if extra > 20 {
			t.Errorf("%d goroutines beyond the Run goroutines of %d held elections; want a constant (≤ 20)", extra, n)
		}
		stop()
	})
}

// BenchmarkHeldElections reports what 1,000 held elections on one memory
// Backend cost at rest, once elected: goroutines beyond their Run
// goroutines and heap, per election (the memory driver's share included).
func BenchmarkHeldElections(b *testing.B) {
	const n = 1000
	for i := range b.N {
		store := memory.New()
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		g0 := runtime.NumGoroutine()
		stop := holdElections(b, store, fmt.Sprintf("bench-%d", i), n, DefaultTTL)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		g1 := runtime.NumGoroutine()
		b.ReportMetric(float64(g1-g0-n)/n, "goroutines/election")
		b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "heap-B/election")
		stop()
		_ = store.Close()
	}
}
