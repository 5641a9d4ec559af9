package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

// TestCleanupRefusesUnmarked: Cleanup on an election whose old store is
// held by a candidate (never migrated) changes nothing and names runbook
// step 3; on an old store with no holder and nothing to remove it says so
// instead of claiming a removal.
func TestCleanupRefusesUnmarked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		plain := old.peer()
		defer plain.Close()
		lo, err := plain.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "live", TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		db, _ := pair(t, old, new, migrate.PhaseDone)
		c, err := db.Cleanup(t.Context(), election)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "step 3") || !strings.Contains(err.Error(), `"live"`) || c.Removed {
			t.Errorf("Cleanup while a candidate holds the old store: got %+v, %v; want ErrInvalid naming step 3 and the holder, nothing removed", c, err)
		}
		if h, err := plain.Leader(t.Context(), election); err != nil || h.Identity != "live" || h.Token != lo.Token() {
			t.Errorf("old store after a refused Cleanup: got %+v, %v; want live still holding token %d", h, err, lo.Token())
		}
		if err := lo.Renew(t.Context()); err != nil {
			t.Errorf("the live leader's Renew after a refused Cleanup: %v", err)
		}
		_ = lo.Release(t.Context())
		c, err = db.Cleanup(t.Context(), election)
		if !errors.Is(err, migrate.ErrNotMarked) || !errors.Is(err, backend.ErrInvalid) || c.Removed || !c.Marker.IsZero() {
			t.Errorf("Cleanup with no marker and no holder: got %+v, %v; want ErrNotMarked, nothing removed", c, err)
		}
		if _, err := migrate.Cleanup(t.Context(), markerOnly{plain}, election); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "Leader") {
			t.Errorf("Cleanup through a Marker that cannot read the holder: got %v; want ErrInvalid saying so", err)
		}
	})
}

// markerOnly hides every method of a markBackend but the Marker's.
type markerOnly struct{ m migrate.Marker }

func (m markerOnly) Mark(ctx context.Context, e string, l backend.Lease, id string) error {
	return m.m.Mark(ctx, e, l, id)
}
func (m markerOnly) Unmark(ctx context.Context, e string) (bool, error) { return m.m.Unmark(ctx, e) }

// TestDoneAfterCleanup: replicas keep the runbook's phase-done Backend, old
// backend included, after Cleanup: a new one (a restart) campaigns and
// leads on the new store, tokens in the new epoch.
func TestDoneAfterCleanup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old, new := newMarkStore(), memory.New()
		nb, _ := pair(t, old, new, migrate.PhaseNew)
		l, err := nb.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatal(err)
		}
		marked := l.Token()
		_ = l.Release(t.Context())
		db, _ := pair(t, old, new, migrate.PhaseDone)
		if c, err := db.Cleanup(t.Context(), election); err != nil || !c.Removed {
			t.Fatalf("Cleanup: got %+v, %v; want the marker removed", c, err)
		}
		restarted, _ := pair(t, old, new, migrate.PhaseDone)
		l, err = restarted.Campaign(t.Context(), cand)
		if err != nil {
			t.Fatalf("PhaseDone restarted after Cleanup: got %v; want it to lead", err)
		}
		if l.Token() <= marked {
			t.Errorf("token after Cleanup %#x not above %#x", l.Token(), marked)
		}
		_ = l.Release(t.Context())
	})
}

// TestNewRefusesOneStoreTwice: the same Backend as old and new, or a
// migrate Backend as either, is refused with a message saying why.
func TestNewRefusesOneStoreTwice(t *testing.T) {
	ob, nb := newMarkStore().peer(), memory.New()
	defer ob.Close()
	defer nb.Close()
	for _, phase := range []migrate.Phase{migrate.PhaseOld, migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		if _, err := migrate.New(ob, ob, phase, nil); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "same") {
			t.Errorf("phase %v, one backend as old and new: got %v; want ErrInvalid saying they are the same", phase, err)
		}
	}
	inner, err := migrate.New(ob, nb, migrate.PhaseBoth, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	other := memory.New()
	defer other.Close()
	for name, pair := range map[string][2]backend.Backend{"old": {inner, other}, "new": {ob, inner}} {
		if _, err := migrate.New(pair[0], pair[1], migrate.PhaseBoth, nil); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "migrate Backend") {
			t.Errorf("a migrate Backend as %s: got %v; want ErrInvalid naming it", name, err)
		}
	}
}
