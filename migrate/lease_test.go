package migrate_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

var (
	_ backend.Warner        = (*redlock.Backend)(nil)
	_ backend.TrailingLease = trailing{}
	_ backend.SinceRenewer  = sinceLease{}
)

// trailingBackend is a memory Backend whose leases say their Deadline
// trails its proof, as a ZooKeeper lease's does.
type trailingBackend struct{ *memory.Backend }

type trailing struct{ backend.Lease }

func (trailing) DeadlineTrails() bool { return true }

func (b trailingBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return trailing{l}, nil
}

// A migrate lease forwards backend.TrailingLease: it trails when a side it
// holds trails, in every phase, and not when no side does.
func TestLeaseForwardsTrailing(t *testing.T) {
	for _, phase := range []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		for _, oldTrails := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/old-trails=%v", phase, oldTrails), func(t *testing.T) {
				old := newMarkStore().peer()
				var ob backend.Backend = old
				if oldTrails {
					ob = trailingMark{old}
				}
				if phase == migrate.PhaseDone {
					ob = nil // after Cleanup
				}
				nb := trailingBackend{memory.New()}
				t.Cleanup(func() { _ = nb.Close() }) // after the lease is released
				tl, ok := migratingLease(t, ob, nb, phase).(backend.TrailingLease)
				if !ok {
					t.Fatalf("a migrate lease does not implement backend.TrailingLease")
				}
				// Every phase but PhaseOld holds the new (trailing) side.
				want := phase != migrate.PhaseOld || oldTrails
				if got := tl.DeadlineTrails(); got != want {
					t.Errorf("DeadlineTrails() = %v in %v with the old side trailing %v; want %v", got, phase, oldTrails, want)
				}
			})
		}
	}
}

// trailingMark is a markBackend whose leases trail.
type trailingMark struct{ *markBackend }

func (b trailingMark) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.markBackend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return trailing{l}, nil
}

// sinceBackend is a memory Backend whose leases are backend.SinceRenewers
// that record the since they were renewed with.
type sinceBackend struct {
	*memory.Backend
	got *[]time.Time
}

type sinceLease struct {
	backend.Lease
	got *[]time.Time
}

func (l sinceLease) RenewSince(ctx context.Context, since time.Time) error {
	*l.got = append(*l.got, since)
	return l.Renew(ctx)
}

func (b sinceBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return sinceLease{l, b.got}, nil
}

// A migrate lease forwards backend.SinceRenewer: RenewSince passes since
// to a side that is one (and renews a side that is not with Renew), so
// that a migrating ZooKeeper election shares its session's request with
// the renewals started at the same instant.
func TestLeaseForwardsRenewSince(t *testing.T) {
	var got []time.Time
	nb := sinceBackend{memory.New(), &got}
	t.Cleanup(func() { _ = nb.Close() }) // after the lease is released
	ob := newMarkStore().peer()
	r, ok := migratingLease(t, ob, nb, migrate.PhaseBoth).(backend.SinceRenewer)
	if !ok {
		t.Fatalf("a migrate lease does not implement backend.SinceRenewer")
	}
	since := time.Now().Add(-time.Millisecond)
	if err := r.RenewSince(t.Context(), since); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Equal(since) {
		t.Errorf("the new side was renewed with since %v; want one RenewSince with %v", got, since)
	}
}

// An Elector on a migrate Backend over ZooKeeper renews its lease about
// once per RenewInterval, as it does on ZooKeeper directly, not at its
// floor (four times per interval): the wrapper says that the ZooKeeper
// lease's Deadline trails its proof.
func TestMigratedZooKeeperRenewsOncePerInterval(t *testing.T) {
	servers := testenv.ZKServers(t)
	zb, err := zookeeper.New(servers, &zookeeper.Options{Prefix: "/elector-migrate-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer zb.Close()
	b, err := migrate.New(nil, zb, migrate.PhaseDone, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Intervals of 3 s, so that the two intervals of slack allowed below
	// outlast a loaded machine's stalls, each of which delays every later
	// renewal.
	const ttl, intervals = 9 * time.Second, 4
	renewals := make(chan time.Time, 64) // when each renewal ended
	elected := make(chan struct{})
	var once sync.Once
	e, err := elector.New(b, fmt.Sprintf("renew-rate-%d", time.Now().UnixNano()), &elector.Options{
		TTL:       ttl,
		Logger:    slog.New(slog.DiscardHandler),
		OnElected: func(context.Context, elector.Term) { once.Do(func() { close(elected) }) },
		Observer: func(ev elector.Event) {
			if ev.Kind == elector.EventRenew {
				select {
				case renewals <- time.Now():
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-elected:
	case <-time.After(30 * time.Second):
		t.Fatal("not elected within 30 s")
	}
	// The time the renewals take to span intervals gaps: about intervals
	// renew intervals at one renewal per interval, a quarter of that at
	// the floor's rate. The grid allows a renewal early now and then.
	var first, last time.Time
	for n := range intervals + 1 {
		select {
		case last = <-renewals:
		case <-time.After(10 * ttl):
			t.Fatalf("%d renewals within %v of the last; want %d", n, 10*ttl, intervals+1)
		}
		if n == 0 {
			first = last
		}
	}
	interval := ttl / 3
	if took := last.Sub(first); took < (intervals-2)*interval || took > (intervals+2)*interval {
		t.Errorf("%d renewals took %v, %.1f renew intervals; want about %d (one per interval)",
			intervals+1, took.Round(time.Millisecond), float64(took)/float64(interval), intervals)
	}
}

// migratingLease returns a lease won on a migrate Backend over ob and nb in
// phase; the lease is released and the Backend closed at the end of the
// test.
func migratingLease(t *testing.T, ob, nb backend.Backend, phase migrate.Phase) backend.Lease {
	t.Helper()
	b, err := migrate.New(ob, nb, phase, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	l, err := b.Campaign(t.Context(), backend.Candidate{Election: "jobs", Identity: "a", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background()) })
	return l
}
