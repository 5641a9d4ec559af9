package term

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
		workers, queued := e.workers, e.queuedLocked()
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
