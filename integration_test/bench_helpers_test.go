package integration_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// latencies collects durations and reports their percentiles.
type latencies []time.Duration

// report adds p50 and p99 (in ms) of ls to b's metrics, under name.
func (ls latencies) report(b *testing.B, name string) {
	if len(ls) == 0 {
		return
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	pct := func(p float64) float64 {
		return float64(s[int(p*float64(len(s)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), name+"-p50-ms")
	b.ReportMetric(pct(0.99), name+"-p99-ms")
}

// benchAcquireRelease campaigns for a free election on be and releases it,
// b.N times, and reports the p50/p99 of each acquire+release as "op".
func benchAcquireRelease(b *testing.B, ctx context.Context, be backend.Backend, c backend.Candidate) {
	ls := make(latencies, 0, b.N)
	for b.Loop() {
		start := time.Now()
		l, err := be.Campaign(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		ls = append(ls, time.Since(start))
	}
	ls.report(b, "op")
}

// benchHandoff hands election c back and forth between two Backends b.N
// times: one holds, the other campaigns, settle runs (untimed) so that the
// waiter is queued, then the holder releases. It reports the p50/p99 from
// Release returning to the waiter's Campaign returning as "handoff".
func benchHandoff(b *testing.B, ctx context.Context, holder, waiter backend.Backend, c backend.Candidate, settle func()) {
	l, err := holder.Campaign(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	ls := make(latencies, 0, b.N)
	b.ResetTimer()
	for range b.N {
		holder, waiter = waiter, holder
		got := make(chan backend.Lease, 1)
		go func() {
			wl, err := holder.Campaign(ctx, c) // holder is now the waiting side
			if err != nil {
				b.Error(err)
			}
			got <- wl
		}()
		b.StopTimer()
		settle()
		b.StartTimer()
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		released := time.Now()
		if l = <-got; l == nil {
			b.FailNow()
		}
		ls = append(ls, time.Since(released))
	}
	b.StopTimer()
	_ = l.Release(ctx)
	ls.report(b, "handoff")
}

// throughputWorkers is how many goroutines a throughput benchmark runs, each
// on its own election.
const throughputWorkers = 8

// benchThroughput runs throughputWorkers goroutines, each calling op on its
// own election (named by name) until b.N operations ran in all, and reports
// ops/s. op is one acquire+release.
func benchThroughput(b *testing.B, ctx context.Context, name func() string, op func(ctx context.Context, name string) error) {
	names := make([]string, throughputWorkers)
	for i := range names {
		names[i] = name()
	}
	var wg sync.WaitGroup
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	errs := make(chan error, throughputWorkers)
	b.ResetTimer()
	start := time.Now()
	for _, name := range names {
		wg.Go(func() {
			for range work {
				if err := op(ctx, name); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
}

// backendOp returns a throughput op that campaigns on be with identity
// "bench" and the given TTL, and releases.
func backendOp(be backend.Backend, ttl time.Duration) func(ctx context.Context, name string) error {
	return func(ctx context.Context, name string) error {
		l, err := be.Campaign(ctx, backend.Candidate{Election: name, Identity: "bench", TTL: ttl})
		if err != nil {
			return err
		}
		return l.Release(ctx)
	}
}
