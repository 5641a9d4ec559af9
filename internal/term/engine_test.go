package term

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// The Finish of the last term of a Backend returns once the engine's
// goroutines (scheduler, loss watchers) have stopped, but for returning: no
// goroutine of the engine outlives the terms that started it.
func TestLastFinishLeavesNoGoroutine(t *testing.T) {
	b := memory.New()
	defer b.Close()
	tm := Timing{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: 600 * time.Millisecond}
	var terms []*Term
	for _, name := range []string{"a", "b", "c"} {
		l, err := b.Campaign(t.Context(), backend.Candidate{Election: name, Identity: "x", TTL: tm.TTL})
		if err != nil {
			t.Fatal(err)
		}
		tt := Start(b, context.Background(), l, l.Deadline(), tm, Hooks{Callback: "test"})
		tt.Go(nil)
		terms = append(terms, tt)
	}
	e := terms[0].e
	e.mu.Lock()
	live := e.live
	e.mu.Unlock()
	if live == 0 {
		t.Fatalf("no goroutine of the engine while 3 terms are held")
	}
	for _, tt := range terms {
		tt.End(errors.New("done"))
		<-tt.Returned()
		if err := tt.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live != 0 || e.running {
		t.Errorf("%d goroutines of the engine left (scheduler running: %v) once the last term finished; want none", e.live, e.running)
	}
}

// Renewals due within RenewInterval/coalesce of one another start
// together, so that terms started apart fall into step (and share a
// driver's request); a renewal due later keeps its own instant.
func TestRenewalsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		defer b.Close()
		tm := Timing{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: 600 * time.Millisecond}
		t0 := time.Now()
		var mu sync.Mutex
		began := map[string][]time.Duration{}
		var terms []*Term
		// a at 0, b 50 ms later (within RI/8 = 125 ms), c 300 ms later.
		for _, s := range []struct {
			name  string
			after time.Duration
		}{{"a", 0}, {"b", 50 * time.Millisecond}, {"c", 250 * time.Millisecond}} {
			time.Sleep(s.after)
			l, err := b.Campaign(t.Context(), backend.Candidate{Election: s.name, Identity: "x", TTL: tm.TTL})
			if err != nil {
				t.Fatal(err)
			}
			name := s.name
			tt := Start(b, context.Background(), l, l.Deadline(), tm, Hooks{Callback: "test", Renewed: func(r Renewal) {
				mu.Lock()
				began[name] = append(began[name], time.Since(t0)-r.Took)
				mu.Unlock()
			}})
			tt.Go(nil)
			terms = append(terms, tt)
		}
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		mu.Lock()
		ra, rb, rc := began["a"], began["b"], began["c"]
		mu.Unlock()
		if len(ra) < 3 || len(rb) < 3 || len(rc) < 3 {
			t.Fatalf("renewals a %v, b %v, c %v; want at least 3 each", ra, rb, rc)
		}
		for i := range 3 {
			if ra[i] != rb[i] {
				t.Errorf("renewal %d of a at %v, of b at %v; want together (due 50 ms apart)", i+1, ra[i], rb[i])
			}
			if rc[i] == ra[i] {
				t.Errorf("renewal %d of c at %v with a's; want its own (due 300 ms apart)", i+1, rc[i])
			}
		}
		for _, tt := range terms {
			tt.End(errors.New("done"))
			<-tt.Returned()
			_ = tt.Release(t.Context())
		}
	})
}

// shortLease returns a memory Backend (closed when t ends), a lease won on
// it and the Timing of a 2 s TTL.
func shortLease(t *testing.T) (*memory.Backend, backend.Lease, Timing) {
	t.Helper()
	b := memory.New()
	t.Cleanup(func() { _ = b.Close() })
	tm := Timing{TTL: 2 * time.Second, RenewInterval: 667 * time.Millisecond, SafetyMargin: 400 * time.Millisecond}
	l, err := b.Campaign(t.Context(), backend.Candidate{Election: "e", Identity: "x", TTL: tm.TTL})
	if err != nil {
		t.Fatal(err)
	}
	return b, l, tm
}

// trailing is a lease whose Deadline trails its proof by lag, as a
// ZooKeeper lease's trails by the ensemble's report lag.
type trailing struct {
	backend.Lease
	lag time.Duration
}

func (l trailing) Deadline() time.Time  { return l.Lease.Deadline().Add(-l.lag) }
func (l trailing) DeadlineTrails() bool { return true }

// A lease whose Deadline, when won, lies closer than a renewal interval
// plus the safety margin is renewed before its step-down point, not on the
// interval's schedule after it: a renewal is always attempted in time to
// move the Deadline, so a healthy lease is never given up for want of an
// attempt.
func TestRenewedBeforeStepDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, l, tm := shortLease(t)
		lease := trailing{l, 1100 * time.Millisecond} // 0.9 s left when won: step-down at 0.5 s
		tt := Start(b, context.Background(), lease, lease.Deadline(), tm, Hooks{Callback: "test"})
		tt.Go(nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		var ended error
		select {
		case <-tt.Ended():
			ended = context.Cause(tt.Context())
		default:
		}
		tt.End(errors.New("done"))
		<-tt.Returned()
		_ = tt.Release(t.Context())
		if ended != nil {
			t.Errorf("term ended within 5s: %v; want it held while every renewal succeeds", ended)
		}
	})
}

// failing is a lease whose renewals fail with a transient error, counting
// them.
type failing struct {
	backend.Lease
	mu       sync.Mutex
	attempts []time.Time
}

func (l *failing) Renew(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts = append(l.attempts, time.Now())
	return errors.New("store unreachable")
}

// Renewals that keep failing are retried ever sooner as the step-down
// point nears, but never sooner than RenewInterval/16 apart: an outage
// costs a term a few attempts, not one a millisecond at the end.
func TestRetriesKeepAFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, l, tm := shortLease(t)
		lease := &failing{Lease: l}
		tt := Start(b, context.Background(), lease, lease.Deadline(), tm, Hooks{Callback: "test"})
		tt.Go(nil)
		<-tt.Ended()
		tt.End(errors.New("done"))
		<-tt.Returned()
		_ = tt.Release(t.Context())
		lease.mu.Lock()
		defer lease.mu.Unlock()
		if len(lease.attempts) < 3 {
			t.Fatalf("%d attempts before the step-down; want the failures retried", len(lease.attempts))
		}
		floor := tm.RenewInterval / 16
		for i := 1; i < len(lease.attempts); i++ {
			if gap := lease.attempts[i].Sub(lease.attempts[i-1]); gap < floor {
				t.Errorf("attempt %d of %d came %v after the one before; want at least %v", i+1, len(lease.attempts), gap, floor)
			}
		}
		// The jitter is random; the floor alone bounds the count: one
		// attempt at RenewInterval, then at most one per floor until the
		// step-down point.
		window := tm.TTL - tm.SafetyMargin - tm.RenewInterval
		if n, most := len(lease.attempts), 1+int(window/floor); n > most {
			t.Errorf("%d attempts before the step-down (TTL %v); want at most %d, one per %v", n, tm.TTL, most, floor)
		}
	})
}

// A run of failed renewals logs at Warn at its 1st, 2nd, 4th, 8th…
// failure and at Debug otherwise.
func TestRetryLevel(t *testing.T) {
	var warned []int
	for n := 1; n <= 20; n++ {
		if RetryLevel(n) == slog.LevelWarn {
			warned = append(warned, n)
		} else if RetryLevel(n) != slog.LevelDebug {
			t.Errorf("RetryLevel(%d) = %v; want Warn or Debug", n, RetryLevel(n))
		}
	}
	if want := []int{1, 2, 4, 8, 16}; !slices.Equal(warned, want) {
		t.Errorf("failures logged at Warn: %v; want %v", warned, want)
	}
}
