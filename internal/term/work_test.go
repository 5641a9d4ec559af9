package term

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// heldLease is a lease whose Renew waits until gate is closed: a store
// slow to answer every renewal.
type heldLease struct {
	backend.Lease
	gate chan struct{}
}

func (l heldLease) Renew(ctx context.Context) error {
	select {
	case <-l.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return l.Lease.Renew(ctx)
}

// A thousand terms renewing at once on a store that holds every renewal
// (a partition member holding a thousand partitions) run on at most
// maxWorkers goroutines, not one each; once the renewals have returned, no
// worker is left.
func TestRenewalsOnBoundedWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const k = 1000
		b := memory.New()
		defer b.Close()
		tm := Timing{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: 600 * time.Millisecond}
		gate := make(chan struct{})
		base := runtime.NumGoroutine()
		terms := make([]*Term, k)
		for i := range terms {
			l, err := b.Campaign(t.Context(), backend.Candidate{Election: fmt.Sprint(i), Identity: "x", TTL: tm.TTL})
			if err != nil {
				t.Fatal(err)
			}
			terms[i] = Start(b, context.Background(), heldLease{l, gate}, l.Deadline(), tm, Hooks{Callback: "test"})
		}
		e := terms[0].e
		synctest.Wait()
		watchers := runtime.NumGoroutine() - base // the scheduler and the loss watchers
		// Renewals are due after RenewInterval; the workers have stalled
		// for long enough to reach their limit well before the step-down
		// point.
		time.Sleep(tm.RenewInterval + 500*time.Millisecond)
		synctest.Wait()
		if n := runtime.NumGoroutine() - base - watchers; n > maxWorkers {
			t.Errorf("%d goroutines renewing %d terms at once, want at most %d: renewals run on a bounded set of workers", n, k, maxWorkers)
		}
		close(gate)
		synctest.Wait()
		e.mu.Lock()
		workers, queued := e.renewals.workers, e.renewals.len()
		e.mu.Unlock()
		if workers != 0 || queued != 0 {
			t.Errorf("%d renewal workers and %d queued renewals left once every renewal returned, want none", workers, queued)
		}
		for _, tt := range terms {
			if r := tt.Reason(); r != nil {
				t.Fatalf("a term ended: %v", r)
			}
			tt.End(errors.New("done"))
			tt.Finish()
		}
	})
}

// sharedProof is a store that proves the renewals of many leases with one
// request, as a ZooKeeper session does: a renewal needs the answer to a
// request sent at or after it began (for a backend.SinceRenewer, at or
// after since), and sends one only when none is in flight.
type sharedProof struct {
	mu       sync.Mutex
	heard    time.Time     // send time of the newest answered request
	probing  chan struct{} // closed when the request in flight is answered
	requests int
	renewing int // renewals in flight
	most     int // most renewals in flight at once
}

func (s *sharedProof) prove(ctx context.Context, start time.Time) error {
	s.mu.Lock()
	s.renewing++
	s.most = max(s.most, s.renewing)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.renewing--
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		if !s.heard.Before(start) {
			s.mu.Unlock()
			return nil
		}
		if p := s.probing; p != nil {
			s.mu.Unlock()
			select {
			case <-p:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		p := make(chan struct{})
		sent := time.Now()
		s.probing = p
		s.requests++
		s.mu.Unlock()
		time.Sleep(time.Millisecond) // the round trip
		s.mu.Lock()
		s.heard, s.probing = sent, nil
		s.mu.Unlock()
		close(p)
	}
}

// sharedLease is a lease whose Deadline trails and whose renewals share
// the requests of a sharedProof.
type sharedLease struct {
	backend.Lease
	s *sharedProof
}

func (l sharedLease) DeadlineTrails() bool { return true }

func (l sharedLease) Renew(ctx context.Context) error { return l.RenewSince(ctx, time.Now()) }

func (l sharedLease) RenewSince(ctx context.Context, since time.Time) error {
	if err := l.s.prove(ctx, since); err != nil {
		return err
	}
	return l.Lease.Renew(ctx)
}

// A thousand trailing leases that share their driver's request (a
// ZooKeeper session's) are renewed on the engine's few workers, not a
// goroutine each, and still with one request per renewal round: the
// engine tells each renewal the instant it started them all.
func TestSinceRenewalsShareOneRequestOnWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const k, rounds = 1000, 3
		b := memory.New()
		defer b.Close()
		tm := Timing{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: 600 * time.Millisecond}
		s := &sharedProof{}
		terms := make([]*Term, k)
		for i := range terms {
			l, err := b.Campaign(t.Context(), backend.Candidate{Election: fmt.Sprint(i), Identity: "x", TTL: tm.TTL})
			if err != nil {
				t.Fatal(err)
			}
			terms[i] = Start(b, context.Background(), sharedLease{l, s}, l.Deadline(), tm, Hooks{Callback: "test"})
		}
		// The first renewal comes within nine eighths of an interval, then
		// one per interval.
		time.Sleep(tm.RenewInterval/8 + rounds*tm.RenewInterval)
		synctest.Wait()
		s.mu.Lock()
		requests, most := s.requests, s.most
		s.mu.Unlock()
		if most > minWorkers {
			t.Errorf("%d renewals of %d terms in flight at once, want at most %d: renewals that share a request run on the engine's workers, which a queue that makes progress does not multiply", most, k, minWorkers)
		}
		if requests > rounds {
			t.Errorf("%d requests in %d renewal rounds of %d terms, want at most one per round: renewals started together share one", requests, rounds, k)
		}
		for _, tt := range terms {
			if r := tt.Reason(); r != nil {
				t.Fatalf("a term ended: %v", r)
			}
			tt.End(errors.New("done"))
			tt.Finish()
		}
	})
}
