package integration_test

// The etcd hand-over through the portable layer beside the same hand-over
// at the driver level, three candidates each, rounds interleaved so that a
// load that changes during the run weighs on both alike:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run '^$' -bench 'EtcdElectorHandoff' -benchtime 30x -count 6 . | tee handoff.txt
//
// Each iteration runs one hand-over of each kind. elector: three Electors
// run; the leader calls Resign, and the time runs from that call to the
// next leader's IsLeader turning true (its EventElected). driver: three
// etcd Backends; the holder's lease is released, and the time runs from
// that call to a waiter's Campaign returning. Every candidate waits in line
// before the holder lets go. It reports the p50 and p99 of each, and
// elector-over-driver-ms: the elector's p50 less the driver's. The target:
// at most 1 ms.

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// handoffCandidates is how many candidates BenchmarkEtcdElectorHandoff
// runs of each kind: a deployment's usual three replicas.
const handoffCandidates = 3

// BenchmarkEtcdElectorHandoff: see the file comment.
func BenchmarkEtcdElectorHandoff(b *testing.B) {
	ctx, cancel := context.WithCancel(etcdCtx(b))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	el := startElectorHandoff(b, ctx, &wg)
	dr := startDriverHandoff(b, ctx, &wg)
	var els, drs latencies
	for b.Loop() {
		els = append(els, el.handoff(b, ctx))
		drs = append(drs, dr.handoff(b, ctx))
	}
	els.report(b, "elector")
	drs.report(b, "driver")
	b.ReportMetric(p50ms(els)-p50ms(drs), "elector-over-driver-ms")
	dr.stop(ctx)
}

// p50ms returns the median of ls in milliseconds.
func p50ms(ls latencies) float64 {
	s := slices.Clone(ls)
	slices.Sort(s)
	return float64(s[(len(s)-1)/2]) / float64(time.Millisecond)
}

// electorHandoff is the elector side of BenchmarkEtcdElectorHandoff.
type electorHandoff struct {
	admin  func(tb testing.TB)
	wins   chan electorWin
	leader *elector.Elector
}

// electorWin is one elector becoming leader, and when.
type electorWin struct {
	e  *elector.Elector
	at time.Time
}

// startElectorHandoff runs three Electors, each on a client of its own,
// until ctx ends, and returns once one leads.
func startElectorHandoff(b *testing.B, ctx context.Context, wg *sync.WaitGroup) *electorHandoff {
	eps := etcdEndpoints(b)
	admin := etcdClient(b, eps...)
	name := etcdName("elector-handoff")
	h := &electorHandoff{
		admin: func(tb testing.TB) { waitEtcdCandidates(tb, admin, name+"/", handoffCandidates) },
		wins:  make(chan electorWin, handoffCandidates),
	}
	for i := range handoffCandidates {
		var self *elector.Elector
		e, err := elector.New(etcdBackend(b, etcdClient(b, eps...)), name, &elector.Options{
			Identity: string(rune('a' + i)),
			TTL:      etcdTTL,
			Observer: func(ev elector.Event) {
				if ev.Kind == elector.EventElected {
					h.wins <- electorWin{self, time.Now()}
				}
			},
			OnElected: func(ctx context.Context, _ elector.Term) { <-ctx.Done() },
			Logger:    slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		self = e
		wg.Go(func() { _ = e.Run(ctx) })
	}
	h.leader = (<-h.wins).e
	return h
}

// handoff waits (untimed) until every candidate is in line, makes the
// leader resign and returns the time to the next leader's election.
func (h *electorHandoff) handoff(b *testing.B, ctx context.Context) time.Duration {
	b.StopTimer()
	h.admin(b)
	b.StartTimer()
	resign := time.Now()
	if err := h.leader.Resign(ctx); err != nil {
		b.Fatal(err)
	}
	w := <-h.wins
	h.leader = w.e
	return w.at.Sub(resign)
}

// driverHandoff is the driver side of BenchmarkEtcdElectorHandoff.
type driverHandoff struct {
	admin    func(tb testing.TB)
	bes      []backend.Backend
	c        backend.Candidate
	wins     chan driverWin
	holder   driverWin
	wg       *sync.WaitGroup
	campaign func(i int)
}

// driverWin is one Backend's campaign returning.
type driverWin struct {
	i  int // -1: the campaign failed
	l  backend.Lease
	at time.Time
}

// startDriverHandoff campaigns on three Backends, each on a client of its
// own, and returns once one holds.
func startDriverHandoff(b *testing.B, ctx context.Context, wg *sync.WaitGroup) *driverHandoff {
	eps := etcdEndpoints(b)
	admin := etcdClient(b, eps...)
	h := &driverHandoff{
		c:    backend.Candidate{Election: etcdName("driver-handoff"), Identity: "bench", TTL: etcdTTL},
		wins: make(chan driverWin, handoffCandidates),
		bes:  make([]backend.Backend, handoffCandidates),
		wg:   wg,
	}
	h.admin = func(tb testing.TB) { waitEtcdCandidates(tb, admin, h.c.Election+"/", handoffCandidates) }
	h.campaign = func(i int) {
		l, err := h.bes[i].Campaign(ctx, h.c)
		if err != nil {
			b.Error(err)
			h.wins <- driverWin{i: -1}
			return
		}
		h.wins <- driverWin{i, l, time.Now()}
	}
	for i := range h.bes {
		h.bes[i] = etcdBackend(b, etcdClient(b, eps...))
		wg.Go(func() { h.campaign(i) })
	}
	if h.holder = <-h.wins; h.holder.i < 0 {
		b.FailNow()
	}
	return h
}

// handoff waits (untimed) until every candidate is in line, releases the
// holder's lease and returns the time to a waiter's win; the released
// Backend campaigns again.
func (h *driverHandoff) handoff(b *testing.B, ctx context.Context) time.Duration {
	b.StopTimer()
	h.admin(b)
	b.StartTimer()
	release := time.Now()
	if err := h.holder.l.Release(ctx); err != nil {
		b.Fatal(err)
	}
	next := <-h.wins
	if next.i < 0 {
		b.FailNow()
	}
	h.wg.Go(func() { h.campaign(h.holder.i) })
	h.holder = next
	return next.at.Sub(release)
}

// stop releases the leases: the waiters win in turn as each holder lets
// go.
func (h *driverHandoff) stop(ctx context.Context) {
	_ = h.holder.l.Release(ctx)
	for range handoffCandidates - 1 {
		if w := <-h.wins; w.i >= 0 {
			_ = w.l.Release(ctx)
		}
	}
}
