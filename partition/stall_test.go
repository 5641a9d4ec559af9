package partition

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// lockedBackend wraps a memory Backend with leases that behave like
// Redlock's: a renewal holds the lease's lock for its whole round, and
// Deadline takes that lock too. While cut, the store does not answer: a
// campaign, a renewal or a release blocks until its ctx ends, except a
// renewal of the election fast, which fails at once.
type lockedBackend struct {
	*memory.Backend
	fast string
	mu   sync.Mutex
	cut  bool
}

func (b *lockedBackend) setCut(cut bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cut = cut
}

func (b *lockedBackend) isCut() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cut
}

func (b *lockedBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if b.isCut() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return &lockedLease{Lease: l, b: b, election: c.Election, mu: make(chan struct{}, 1)}, nil
}

// lockedLease's lock is a channel, not a sync.Mutex: testing/synctest
// counts a goroutine waiting on a channel as blocked, not one waiting on a
// mutex.
type lockedLease struct {
	backend.Lease
	b        *lockedBackend
	election string
	mu       chan struct{}
}

func (l *lockedLease) lock()   { l.mu <- struct{}{} }
func (l *lockedLease) unlock() { <-l.mu }

func (l *lockedLease) Deadline() time.Time {
	l.lock()
	defer l.unlock()
	return l.Lease.Deadline()
}

func (l *lockedLease) Renew(ctx context.Context) error {
	l.lock()
	defer l.unlock()
	if l.b.isCut() && l.b.fast == l.election {
		return errors.New("connection refused")
	}
	if l.b.isCut() {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.Lease.Renew(ctx)
}

func (l *lockedLease) Release(ctx context.Context) error {
	l.lock()
	defer l.unlock()
	if l.b.isCut() {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.Lease.Release(ctx)
}

// TestStalledRenewalDoesNotDelayStepDown is the regression test of a double
// owner seen on Redlock: a driver may hold a lease's lock for a whole
// renewal round, Deadline included, and the loop used to read every
// lease's Deadline itself. Cut off from the store, the member's loop then
// waited behind a renewal of a lease that expires late, while the step-down
// point of one that expires early passed: another member won that
// partition at its expiry while the first still ran OnAssigned for it.
//
// Member a owns 32 partitions: partition 0 renewed at t0+1s, the others,
// lost and won again at t0+0.7s, renewed at t0+1.7s. Cut at t0+1.8s, a's
// renewals of partition 0 fail at once from t0+2s, the others' block from
// t0+2.7s until their ctx ends (their step-down point, t0+4.4s). The old
// loop, reading their Deadline, waited until then, past partition 0's
// step-down point (t0+3.7s) and its expiry at the store (t0+4s), where
// member b, which no longer sees a, takes it. The ledger fails the test if
// a's OnAssigned for partition 0 still runs then. A loop that waits on the
// renewals' Deadline fails it every time; the scenario runs 3 times, with
// the map orders and goroutine schedules of each.
func TestStalledRenewalDoesNotDelayStepDown(t *testing.T) {
	for round := range 3 {
		stalledRenewal(t, fmt.Sprintf("stall-%d", round))
	}
}

func stalledRenewal(t *testing.T, group string) {
	synctest.Test(t, func(t *testing.T) {
		const n = 32
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		opts := func(id string) *Options {
			o := g.options(id)
			o.TTL, o.RenewInterval, o.SafetyMargin, o.PollInterval = 3*time.Second, time.Second, 300*time.Millisecond, 100*time.Millisecond
			return o
		}
		lb := &lockedBackend{Backend: store.Peer(), fast: Election(group, 0)}
		a := start(t, lb, group, n, opts("a"))
		defer a.cancel() // so that a failure below still ends every goroutine
		until(t, time.Minute, func() bool { return len(a.a.Owned()) == n })
		t0 := time.Now()
		time.Sleep(700 * time.Millisecond)
		for p := 1; p < n; p++ {
			store.Expire(Election(group, p))
		}
		until(t, time.Minute, func() bool { return len(a.a.Owned()) == n })
		if d := time.Since(t0); d > 750*time.Millisecond {
			t.Fatalf("partitions 1… won again %v after t0; want about 700 ms", d)
		}
		time.Sleep(time.Until(t0.Add(1800 * time.Millisecond)))
		lb.setCut(true)
		time.Sleep(1200 * time.Millisecond)
		b := start(t, store.Peer(), group, n, opts("b"))
		defer b.cancel()
		defer lb.setCut(false)
		until(t, time.Minute, func() bool { return len(b.a.Owned()) == n })
		if owners := g.owners(n); owners[0] != "b" {
			t.Errorf("partition 0 owned by %q; want b", owners[0])
		}
		lb.setCut(false)
		b.stop(t)
		a.stop(t)
		g.checkRevoked()
	})
}
