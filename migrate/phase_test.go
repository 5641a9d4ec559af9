package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

var cand = backend.Candidate{Election: election, Identity: "a", TTL: ttl}

// pair returns a migrate.Backend in phase over fresh handles on old and
// new, closed at the end of the test.
func pair(t *testing.T, old *markStore, new *memory.Backend, phase migrate.Phase) (*migrate.Backend, *markBackend) {
	t.Helper()
	ob, nb := old.peer(), new.Peer()
	b, err := migrate.New(ob, nb, phase, &migrate.Options{NewName: "mem"}) // ob is the default Marker
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(); _ = ob.Close(); _ = nb.Close() })
	return b, ob
}

// TestLosingEitherSideEndsTheTerm: in PhaseBoth, a lease dropped by either
// store closes Lost and makes Renew fail with ErrLost.
func TestLosingEitherSideEndsTheTerm(t *testing.T) {
	for _, side := range []string{"old", "new"} {
		t.Run(side, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				old, new := newMarkStore(), memory.New()
				b, _ := pair(t, old, new, migrate.PhaseBoth)
				l, err := b.Campaign(t.Context(), cand)
				if err != nil {
					t.Fatal(err)
				}
				store := new
				if side == "old" {
					store = old.mem
				}
				if !store.Expire(election) {
					t.Fatal("Expire: no holder on the store")
				}
				synctest.Wait()
				select {
				case <-l.Lost():
				default:
					t.Fatalf("the %s side was dropped: got Lost open, want it closed", side)
				}
				if err := l.Renew(t.Context()); !errors.Is(err, backend.ErrLost) {
					t.Errorf("Renew after the %s side was dropped: got %v, want ErrLost", side, err)
				}
				// The side still held is given back by Release.
				if err := l.Release(t.Context()); err != nil {
					t.Errorf("Release: %v", err)
				}
				for name, s := range map[string]*memory.Backend{"old": old.mem, "new": new} {
					if h, err := s.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
						t.Errorf("%s store after Release: got holder %+v, %v; want none", name, h, err)
					}
				}
			})
		})
	}
}

// TestBothDeadlineIsTheEarlier: the lease's Deadline is the earlier side's,
// and Renew moves both.
func TestBothDeadlineIsTheEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		b, _ := pair(t, old, new, migrate.PhaseBoth)
		l, err := b.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(t.Context())
		if got, want := l.Deadline(), time.Now().Add(ttl); !got.Equal(want) {
			t.Errorf("Deadline: got %v, want %v", got, want)
		}
		time.Sleep(ttl / 2)
		if err := l.Renew(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, want := l.Deadline(), time.Now().Add(ttl); !got.Equal(want) {
			t.Errorf("Deadline after Renew: got %v, want %v", got, want)
		}
		time.Sleep(ttl * 3 / 4) // past the first TTL: both sides must have been renewed
		select {
		case <-l.Lost():
			t.Error("Lost closed: Renew did not renew both sides")
		default:
		}
	})
}

// TestBothHoldsOldWhileWaitingForNew: a PhaseBoth candidate that holds the
// old side keeps it renewed while the new side is taken, however long that
// lasts, and releases it when its campaign ends.
func TestBothHoldsOldWhileWaitingForNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		b, _ := pair(t, old, new, migrate.PhaseBoth)
		other, err := new.Peer().Campaign(t.Context(), backend.Candidate{Election: election, Identity: "new-only", TTL: 10 * ttl})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*ttl)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := b.Campaign(ctx, cand); done <- err }()
		time.Sleep(4 * ttl)
		if h, err := old.mem.Leader(t.Context(), election); err != nil || h.Identity != "a" {
			t.Errorf("old store after 4 TTLs of waiting: got %+v, %v; want a renewed hold by a", h, err)
		}
		if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Campaign: got %v, want context.DeadlineExceeded", err)
		}
		if h, err := old.mem.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
			t.Errorf("old store after the campaign ended: got %+v, %v; want it released", h, err)
		}
		_ = other.Release(t.Context())
	})
}

// TestBothGivesNewBackWhileOldTaken: a PhaseBoth candidate campaigns on
// both sides at once; when its old campaign has not won within 100 ms
// (another holds the old side), it gives the new side back, well before a
// renew interval, so that whichever candidate wins the old
// side next finds the new one free. It leads once it wins the old side,
// then the new one again.
func TestBothGivesNewBackWhileOldTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		b, _ := pair(t, old, new, migrate.PhaseBoth)
		holder, err := old.peer().Campaign(t.Context(), backend.Candidate{Election: election, Identity: "old-only", TTL: 10 * ttl})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan backend.Lease, 1)
		go func() {
			l, err := b.Campaign(t.Context(), cand)
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		synctest.Wait()
		if h, err := new.Leader(t.Context(), election); err != nil || h.Identity != "a" {
			t.Fatalf("new store while a waits for the old side: got %+v, %v; want a holding it", h, err)
		}
		time.Sleep(ttl / 5) // three fifths of the default renew interval
		synctest.Wait()
		if h, err := new.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
			t.Fatalf("new store three fifths of a renew interval later: got %+v, %v; want it given back", h, err)
		}
		if err := holder.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		l := <-got
		if l == nil {
			t.FailNow()
		}
		for name, s := range map[string]*memory.Backend{"old": old.mem, "new": new} {
			if h, err := s.Leader(t.Context(), election); err != nil || h.Identity != "a" {
				t.Errorf("%s store once a leads: got %+v, %v; want a", name, h, err)
			}
		}
		_ = l.Release(t.Context())
	})
}

// TestNewFailureReleasesOld: when the new backend refuses the campaign, the
// old side is given back at once.
func TestNewFailureReleasesOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		ob, nb := old.peer(), new.Peer()
		defer ob.Close()
		b, err := migrate.New(ob, nb, migrate.PhaseBoth, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		_ = nb.Close()
		if _, err := b.Campaign(t.Context(), cand); !errors.Is(err, backend.ErrClosed) {
			t.Errorf("Campaign with the new backend closed: got %v, want ErrClosed", err)
		}
		if h, err := old.mem.Leader(t.Context(), election); !errors.Is(err, backend.ErrNoLeader) {
			t.Errorf("old store: got holder %+v, %v; want the old side released", h, err)
		}
	})
}

// checkRefused checks a PhaseOld refusal: ErrInvalid, naming the runbook
// step and the marker.
func checkRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "step 3") || !strings.Contains(err.Error(), "migrated-to-mem") {
		t.Errorf("PhaseOld campaign on a migrated election: got %v; want ErrInvalid naming runbook step 3 and the marker", err)
	}
}

// TestLateOldReplicaRefused: once the marker is written, a PhaseOld replica
// is refused, whether it campaigns afterwards or was already waiting.
func TestLateOldReplicaRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		nb, _ := pair(t, old, new, migrate.PhaseNew)
		ob, _ := pair(t, old, new, migrate.PhaseOld)
		holder, err := old.peer().Campaign(t.Context(), backend.Candidate{Election: election, Identity: "old-holder", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		won := make(chan backend.Lease, 1)
		go func() {
			l, err := nb.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "n", TTL: ttl})
			if err != nil {
				t.Error(err)
			}
			won <- l
		}()
		synctest.Wait() // the PhaseNew replica queues first on the old store
		waiting := make(chan error, 1)
		go func() { _, err := ob.Campaign(t.Context(), cand); waiting <- err }()
		synctest.Wait()
		_ = holder.Release(t.Context())
		l := <-won
		if l == nil {
			t.FailNow()
		}
		if ep, _ := migrate.SplitToken(l.Token()); ep != 1 {
			t.Errorf("PhaseNew term: got epoch %d, want 1", ep)
		}
		checkRefused(t, <-waiting)
		_, err = ob.Campaign(t.Context(), cand)
		checkRefused(t, err)
		if h, err := ob.Leader(t.Context(), election); err != nil || h.Identity != "migrated-to-mem" {
			t.Errorf("PhaseOld Leader: got %+v, %v; want the marker migrated-to-mem", h, err)
		}
		_ = l.Release(t.Context())
	})
}

// TestBothSwitchesToNewOnMarker: a PhaseBoth replica waiting on the old
// store when the marker is written campaigns on the new store alone, with
// the new epoch, and so does every later PhaseBoth campaign.
func TestBothSwitchesToNewOnMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		nb, _ := pair(t, old, new, migrate.PhaseNew)
		bb, _ := pair(t, old, new, migrate.PhaseBoth)
		first, err := bb.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		won := make(chan backend.Lease, 2)
		campaign := func(b *migrate.Backend, id string) {
			l, err := b.Campaign(t.Context(), backend.Candidate{Election: election, Identity: id, TTL: ttl})
			if err != nil {
				t.Error(err)
			}
			won <- l
		}
		go campaign(nb, "n")
		synctest.Wait()
		go campaign(bb, "b")
		synctest.Wait()
		_ = first.Release(t.Context())
		ln := <-won
		if ln == nil || !strings.HasPrefix(mustLeader(t, bb).Identity, "n") {
			t.Fatalf("got %v first; want the PhaseNew replica, queued first", ln)
		}
		_ = ln.Release(t.Context())
		lb := <-won
		if lb == nil {
			t.FailNow()
		}
		if lb.Token() <= ln.Token() {
			t.Errorf("PhaseBoth term after the marker: got token %#x after %#x; want it higher", lb.Token(), ln.Token())
		}
		if ep, _ := migrate.SplitToken(lb.Token()); ep != 1 {
			t.Errorf("PhaseBoth term after the marker: got epoch %d, want 1", ep)
		}
		_ = lb.Release(t.Context())
	})
}

func mustLeader(t *testing.T, b *migrate.Backend) backend.Holder {
	t.Helper()
	h, err := b.Leader(t.Context(), election)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDoneBeforeMarkerRefused: PhaseDone with an old backend refuses to
// campaign while a candidate holds the old store (runbook step 3 not done),
// then, once the marker is written, runs on new alone.
func TestDoneBeforeMarkerRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		plain := old.peer()
		defer plain.Close()
		lo, err := plain.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "old-only", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		db, _ := pair(t, old, new, migrate.PhaseDone)
		_, err = db.Campaign(t.Context(), cand)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "step 3") || !strings.Contains(err.Error(), "old-only") {
			t.Errorf("PhaseDone while old-only leads the old store: got %v; want ErrInvalid naming runbook step 3 and the holder", err)
		}
		_ = lo.Release(t.Context())
		nb, _ := pair(t, old, new, migrate.PhaseNew)
		l, err := nb.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Release(t.Context())
		if l, err = db.Campaign(t.Context(), cand); err != nil {
			t.Fatalf("PhaseDone after the marker: %v", err)
		}
		_ = l.Release(t.Context())
	})
}
