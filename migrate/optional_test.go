package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/partition"
)

// counted is a memory Backend that counts its Leader, Leaders and Watch
// calls, and has a TTL floor when floor is set.
type counted struct {
	*memory.Backend
	singles, batches, watches atomic.Int64
	floor                     time.Duration
}

func (c *counted) Leader(ctx context.Context, election string) (backend.Holder, error) {
	c.singles.Add(1)
	return c.Backend.Leader(ctx, election)
}

func (c *counted) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	c.batches.Add(1)
	hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	for i, e := range elections {
		hs[i], errs[i] = c.Backend.Leader(ctx, e)
	}
	return hs, errs
}

func (c *counted) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	c.watches.Add(1)
	return c.Backend.Watch(ctx, election, fn)
}

func (c *counted) MinTTL(context.Context) (time.Duration, string, error) {
	if c.floor == 0 {
		return 0, "", errors.ErrUnsupported
	}
	return c.floor, fmt.Sprintf("floor %v", c.floor), nil
}

// plain hides every optional ability of the Backend it embeds.
type plain struct{ backend.Backend }

func newMigrating(t *testing.T, old, new backend.Backend, phase migrate.Phase, opts *migrate.Options) *migrate.Backend {
	t.Helper()
	if opts == nil {
		opts = &migrate.Options{NewName: "mem"}
	}
	b, err := migrate.New(old, new, phase, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// An Elector on a migrating Backend learns of leader changes from the
// stores' watches, not by polling: the migrating Backend is a Watcher, and
// in PhaseBoth it watches both stores.
func TestElectorWatchesThroughMigrate(t *testing.T) {
	old, nw := &counted{Backend: memory.New()}, &counted{Backend: memory.New()}
	defer old.Close()
	defer nw.Close()
	mb := newMigrating(t, old, nw, migrate.PhaseBoth, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader := make(chan elector.Holder, 16)
	e, err := elector.New(mb, "jobs", &elector.Options{
		Identity: "a",
		TTL:      time.Second,
		Logger:   slog.New(slog.DiscardHandler),
		OnLeaderChange: func(h elector.Holder) {
			select {
			case leader <- h:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	for h := range leader {
		if h.Identity == "a" {
			break
		}
	}
	cancel()
	<-done
	if o, n := old.watches.Load(), nw.watches.Load(); o == 0 || n == 0 {
		t.Errorf("watches of the old and the new store: %d and %d; want at least one each: the Elector polls a migrating Backend that is no backend.Watcher", o, n)
	}
}

// A partition group's table on a migrating Backend is read in batches:
// one Leaders call per store and chunk, no Leader call per election, and
// the same owners as the stores hold.
func TestPartitionReadsInBatchesThroughMigrate(t *testing.T) {
	ctx := context.Background()
	old, nw := &counted{Backend: memory.New()}, &counted{Backend: memory.New()}
	defer old.Close()
	defer nw.Close()
	mb := newMigrating(t, old, nw, migrate.PhaseBoth, nil)
	const group, n = "batch", 20
	for p := 0; p < n; p += 2 {
		l, err := mb.Campaign(ctx, backend.Candidate{Election: partition.Election(group, p), Identity: fmt.Sprint("w", p), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
	}
	old.singles.Store(0)
	nw.singles.Store(0)
	tab, err := partition.ReadTable(ctx, mb, group, n)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*counted{old, nw} {
		if b, single := s.batches.Load(), s.singles.Load(); b == 0 || single != 0 {
			t.Errorf("reading a table of %d partitions: %d batched and %d single reads of a store; want some and 0", n, b, single)
		}
	}
	for p, o := range tab.Partitions {
		want := ""
		if p%2 == 0 {
			want = fmt.Sprint("w", p)
		}
		if o.Owner != want {
			t.Errorf("partition %d: owner %q; want %q", p, o.Owner, want)
		}
	}
}

// Leaders reports, in every phase, what Leader reports for each election:
// holders with their side's epoch, the marker, no leader, and an invalid
// name's error.
func TestLeadersAgreesWithLeader(t *testing.T) {
	ctx := context.Background()
	for _, phase := range []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		t.Run(phase.String(), func(t *testing.T) {
			store := newMarkStore()
			old := store.peer()
			defer old.Close()
			nw := memory.New()
			defer nw.Close()
			// "held" is held on both stores, "marked" carries the marker on
			// the old store and is held on the new one, "free" has no holder.
			for _, e := range []string{"held", "marked"} {
				lo, err := old.Campaign(ctx, backend.Candidate{Election: e, Identity: "o", TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if e == "marked" {
					if err := old.Mark(ctx, e, lo, migrate.MarkerPrefix+"mem"); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := nw.Campaign(ctx, backend.Candidate{Election: e, Identity: "n", TTL: time.Hour}); err != nil {
					t.Fatal(err)
				}
			}
			mb := newMigrating(t, old, nw, phase, nil)
			elections := []string{"held", "marked", "free", "bad/"}
			hs, errs := mb.Leaders(ctx, elections)
			if len(hs) != len(elections) || len(errs) != len(elections) {
				t.Fatalf("Leaders: %d holders and %d errors for %d elections", len(hs), len(errs), len(elections))
			}
			for i, e := range elections {
				h, err := mb.Leader(ctx, e)
				h.TTL, hs[i].TTL = 0, 0
				if h != hs[i] || fmt.Sprint(err) != fmt.Sprint(errs[i]) {
					t.Errorf("election %q: Leaders got (%+v, %v); Leader got (%+v, %v)", e, hs[i], errs[i], h, err)
				}
			}
			if !errors.Is(errs[2], backend.ErrNoLeader) || !errors.Is(errs[3], backend.ErrInvalid) {
				t.Errorf("Leaders errors %v; want ErrNoLeader for free, ErrInvalid for bad/", errs)
			}
		})
	}
}

// Watch reports the holder Leader reports: in PhaseBoth the old store's
// while it is unmarked (with the old epoch), then the new store's (with
// the next epoch) once the marker is written; a store without a Watcher
// is read every RenewInterval.
func TestWatchFollowsLeader(t *testing.T) {
	for _, watcher := range []bool{true, false} {
		t.Run(fmt.Sprintf("watcher=%v", watcher), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				store := newMarkStore()
				old := store.peer()
				defer old.Close()
				nw := memory.New()
				defer nw.Close()
				var ob, nb backend.Backend = old, nw
				if !watcher {
					ob, nb = plainMarker{plain{old}, old}, plain{nw}
				}
				mb := newMigrating(t, ob, nb, migrate.PhaseBoth, &migrate.Options{NewName: "mem", Epoch: 2, RenewInterval: 100 * time.Millisecond})
				got := make(chan backend.Holder, 16)
				done := make(chan error, 1)
				go func() {
					done <- mb.Watch(ctx, "jobs", func(h backend.Holder) { got <- h })
				}()
				next := func(what string) backend.Holder {
					t.Helper()
					select {
					case h := <-got:
						return h
					case err := <-done:
						t.Fatalf("%s: Watch returned %v", what, err)
					case <-time.After(time.Second):
						t.Fatalf("%s: no report within a second", what)
					}
					return backend.Holder{}
				}
				if h := next("first report"); !h.IsZero() {
					t.Errorf("first report: %+v; want no holder", h)
				}
				lo, err := old.Campaign(ctx, backend.Candidate{Election: "jobs", Identity: "o", TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if h := next("old holder"); h.Identity != "o" || h.Token != tok(t, 2, lo.Token()) {
					t.Errorf("after a campaign on the old store: %+v; want o with token %d", h, tok(t, 2, lo.Token()))
				}
				ln, err := nw.Campaign(ctx, backend.Candidate{Election: "jobs", Identity: "n", TTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				if err := old.Mark(ctx, "jobs", lo, migrate.MarkerPrefix+"mem"); err != nil {
					t.Fatal(err)
				}
				// Until both stores' changes are seen, the leader may still
				// be o, or none (the marker seen, n not yet).
				h := next("new holder")
				for h.Identity == "o" || h.IsZero() {
					h = next("new holder")
				}
				if h.Identity != "n" || h.Token != tok(t, 3, ln.Token()) {
					t.Errorf("after the marker: %+v; want n with token %d", h, tok(t, 3, ln.Token()))
				}
				cancel()
				if err := <-done; err != context.Canceled {
					t.Errorf("Watch after cancel: %v; want context.Canceled", err)
				}
			})
		})
	}
}

// tok is migrate.Token(epoch, native), which must not fail.
func tok(t *testing.T, epoch uint16, native uint64) uint64 {
	t.Helper()
	v, err := migrate.Token(epoch, native)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// plainMarker is a markBackend without Watch.
type plainMarker struct {
	plain
	m migrate.Marker
}

func (p plainMarker) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	return p.m.Mark(ctx, election, held, identity)
}

func (p plainMarker) Unmark(ctx context.Context, election string) (bool, error) {
	return p.m.Unmark(ctx, election)
}

// MinTTL is the highest floor of the stores the phase campaigns on, and
// wraps errors.ErrUnsupported when none has one.
func TestMinTTLOfCampaignedStores(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		phase          migrate.Phase
		oldF, newF     time.Duration
		want           time.Duration
		wantErr, which string
	}{
		{migrate.PhaseOld, 2 * time.Second, 5 * time.Second, 2 * time.Second, "", "old store"},
		{migrate.PhaseBoth, 2 * time.Second, 5 * time.Second, 5 * time.Second, "", "new store"},
		{migrate.PhaseNew, 7 * time.Second, 0, 7 * time.Second, "", "old store"},
		{migrate.PhaseDone, 7 * time.Second, 0, 0, "unsupported", ""},
		{migrate.PhaseBoth, 0, 0, 0, "unsupported", ""},
	} {
		old, nw := &counted{Backend: memory.New(), floor: c.oldF}, &counted{Backend: memory.New(), floor: c.newF}
		var ob, nb backend.Backend = old, nw
		if c.oldF == 0 {
			ob = plain{old}
		}
		if c.newF == 0 {
			nb = plain{nw}
		}
		marker := newMarkStore().peer()
		mb := newMigrating(t, ob, nb, c.phase, &migrate.Options{NewName: "mem", Marker: marker})
		got, why, err := mb.MinTTL(ctx)
		switch {
		case c.wantErr != "":
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("%v, floors %v and %v: MinTTL got (%v, %q, %v); want an error wrapping errors.ErrUnsupported", c.phase, c.oldF, c.newF, got, why, err)
			}
		case err != nil || got != c.want || why[:len(c.which)] != c.which:
			t.Errorf("%v, floors %v and %v: MinTTL got (%v, %q, %v); want %v from the %s", c.phase, c.oldF, c.newF, got, why, err, c.want, c.which)
		}
		old.Close()
		nw.Close()
		marker.Close()
	}
}

// The migrating Backend forwards every optional ability of the backends it
// wraps, as backendtest.RunWrapper checks, in every phase.
func TestWrapperForwardsAbilities(t *testing.T) {
	for _, phase := range []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		t.Run(phase.String(), func(t *testing.T) {
			backendtest.RunWrapper(t, func(t *testing.T, open func() backend.Backend) backend.Backend {
				marker := newMarkStore().peer() // writes PhaseNew's marker
				t.Cleanup(func() { _ = marker.Close() })
				return newMigrating(t, open(), open(), phase, &migrate.Options{NewName: "mem", Marker: marker})
			}, map[string]string{
				"Registry":     "a priority orders the candidates of one store, and a migrating election spans two (package backend's index)",
				"Registration": "returned by Registry only",
			})
		})
	}
}
