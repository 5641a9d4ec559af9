package migrate_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/migratetest"
	"github.com/leaderkit/elector/migrate"
)

const (
	election = "jobs"
	ttl      = time.Second
)

// world holds the two stores of a migration and the replicas running on them.
type world struct {
	t     *testing.T
	old   *markStore
	new   *memory.Backend
	fence *migratetest.Fence
}

func newWorld(t *testing.T) *world {
	return &world{t: t, old: newMarkStore(), new: memory.New(), fence: migratetest.NewFence(t)}
}

// backendFor returns what a replica in phase campaigns through: the old
// store alone for an unmodified replica (phase 0), else a migrate.Backend.
func (w *world) backendFor(phase migrate.Phase) (backend.Backend, []func() error) {
	ob, nb := w.old.peer(), w.new.Peer()
	if phase == 0 {
		return ob, []func() error{ob.Close}
	}
	mb, err := migrate.New(ob, nb, phase, &migrate.Options{Marker: ob, NewName: "mem"})
	if err != nil {
		w.t.Fatal(err)
	}
	return mb, []func() error{mb.Close, ob.Close, nb.Close}
}

// start runs replica id in phase (0: unmodified, old backend alone).
func (w *world) start(id string, phase migrate.Phase) *migratetest.Replica {
	b, closes := w.backendFor(phase)
	return migratetest.StartReplica(w.t, b, closes, election, id, ttl, nil, w.fence)
}

// TestRollingMigration rolls five replicas one at a time from the old
// backend alone through every phase, leaders resigning every 300 ms, and
// checks that no two terms overlap and that tokens rise across the switch.
// Replicas 0-2 start unmodified (no migrate package), 3-4 in PhaseOld.
func TestRollingMigration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t)
		rs := make([]*migratetest.Replica, 5)
		for i := range rs {
			phase := migrate.PhaseOld
			if i < 3 {
				phase = 0
			}
			rs[i] = w.start(fmt.Sprintf("r%d-step1", i), phase)
		}
		time.Sleep(2 * time.Second)
		var late *migratetest.Replica
		for _, phase := range []migrate.Phase{migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
			for i := range rs {
				if err := rs[i].Stop(); err != nil {
					t.Fatalf("replica %s: Run: %v", rs[i].ID, err)
				}
				rs[i] = w.start(fmt.Sprintf("r%d-%v", i, phase), phase)
				time.Sleep(700 * time.Millisecond)
				if phase == migrate.PhaseNew && i == 0 {
					// A replica deployed late with the old configuration, as
					// the marker is being written: it must never win.
					late = w.start("late-unmodified", 0)
				}
			}
		}
		time.Sleep(2 * time.Second)
		if late.Elector.IsLeader() {
			t.Error("late unmodified old-only replica leads: got a term, want it blocked behind the marker")
		}
		for _, r := range append(rs, late) {
			if err := r.Stop(); err != nil {
				t.Errorf("replica %s: Run: %v", r.ID, err)
			}
		}
		checkEpochs(t, w.fence.Terms())
	})
}

// checkEpochs checks that terms ran in both epochs, the late replica never
// led, and every epoch-1 term follows every epoch-0 one.
func checkEpochs(t *testing.T, terms []elector.Term) {
	t.Helper()
	var n [2]int
	for _, tm := range terms {
		ep, _ := migrate.SplitToken(tm.Token)
		if ep > 1 {
			t.Errorf("term %v: epoch %d; want 0 or 1", tm, ep)
			continue
		}
		n[ep]++
		if tm.Identity == "late-unmodified" {
			t.Errorf("term %v: the late old-only replica won", tm)
		}
	}
	if n[0] < 5 || n[1] < 5 {
		t.Errorf("got %d terms in epoch 0 and %d in epoch 1; want at least 5 of each (the migration did not exercise both sides)", n[0], n[1])
	}
	t.Logf("%d terms: %d on the old side, %d on the new", len(terms), n[0], n[1])
}
