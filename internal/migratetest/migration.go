package migratetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
)

// Side makes the backends of one store for one replica; each is closed by
// the replica that uses it.
type Side func(tb testing.TB) backend.Backend

// Identities of the late replicas, which must never lead.
const (
	LateUnmodified = "late-unmodified"
	LatePhaseOld   = "late-phase-old"
)

// Migration runs replicas of one election on an old and a new store.
type Migration struct {
	TB       testing.TB
	Election string
	Old, New Side
	// NewName is migrate.Options.NewName: the marker names it.
	NewName string
	// TTL is the replicas' lease TTL.
	TTL time.Duration
	// Replicas is how many replicas Roll restarts one at a time.
	Replicas int
	// Log receives the replicas' logs; nil discards them.
	Log *slog.Logger
	// Fence checks the terms; Run makes one when it is nil.
	Fence *Fence
}

// Start runs replica id in phase; phase 0 is an unmodified replica on the
// old backend alone.
func (m *Migration) Start(id string, phase migrate.Phase) *Replica {
	m.TB.Helper()
	ob := m.Old(m.TB)
	var b backend.Backend = ob
	closes := []func() error{ob.Close}
	if phase != 0 {
		nb := m.New(m.TB)
		mb, err := migrate.New(ob, nb, phase, &migrate.Options{NewName: m.NewName})
		if err != nil {
			m.TB.Fatal(err)
		}
		b, closes = mb, []func() error{mb.Close, ob.Close, nb.Close}
	}
	return StartReplica(m.TB, b, closes, m.Election, id, m.TTL, m.Log, m.Fence)
}

// awaitTerm waits until a term starts after next was taken (terms last
// Hold, so the replicas running then elect a leader): each step of the
// roll goes on once the replicas it left running have elected.
func (m *Migration) awaitTerm(next <-chan struct{}) {
	t := time.NewTimer(30 * m.TTL)
	defer t.Stop()
	select {
	case <-next:
	case <-t.C:
		m.TB.Fatal("no term started within 30 TTLs")
	}
}

// Roll runs the runbook with Replicas replicas, restarted one at a time
// into each phase, each restart once a term has started since the previous
// one; a late unmodified replica and a late PhaseOld replica start once the
// first PhaseNew replica runs and the old store reports the marker (runbook
// step 3). It returns the late PhaseOld replica's Run error.
func (m *Migration) Roll() (lateErr error) {
	if m.Fence == nil {
		m.Fence = NewFence(m.TB)
	}
	rs := make([]*Replica, m.Replicas)
	next := m.Fence.NextTerm()
	for i := range rs {
		rs[i] = m.Start(fmt.Sprintf("r%d-step1", i), 0)
	}
	m.awaitTerm(next)
	var late, lateOld *Replica
	for _, phase := range []migrate.Phase{migrate.PhaseBoth, migrate.PhaseNew, migrate.PhaseDone} {
		for i := range rs {
			if err := rs[i].Stop(); err != nil {
				m.TB.Errorf("replica %s: Run: %v", rs[i].ID, err)
			}
			next := m.Fence.NextTerm()
			rs[i] = m.Start(fmt.Sprintf("r%d-%v", i, phase), phase)
			if phase == migrate.PhaseNew && i == 0 {
				m.WaitMarked()
				late = m.Start(LateUnmodified, 0)
				lateOld = m.Start(LatePhaseOld, migrate.PhaseOld)
			}
			m.awaitTerm(next)
		}
	}
	// Two more terms: the late replicas had every chance to lead.
	m.awaitTerm(m.Fence.NextTerm())
	m.awaitTerm(m.Fence.NextTerm())
	if late.Elector.IsLeader() {
		m.TB.Error("the late unmodified replica leads; want it blocked behind the marker")
	}
	returned, lateErr := lateOld.Returned(10 * m.TTL)
	if !returned {
		m.TB.Error("the late PhaseOld replica still runs; want its Run refused")
	}
	for _, r := range append(rs, late, lateOld) {
		if err := r.Stop(); err != nil && r != lateOld {
			m.TB.Errorf("replica %s: Run: %v", r.ID, err)
		}
	}
	return lateErr
}

// WaitMarked waits until the old store reports the marker as the holder,
// watching it through a backend of its own.
func (m *Migration) WaitMarked() {
	m.TB.Helper()
	ob := m.Old(m.TB)
	defer ob.Close()
	w, ok := ob.(backend.Watcher)
	if !ok {
		m.TB.Fatalf("old backend %T is not a Watcher", ob)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*m.TTL)
	defer cancel()
	err := w.Watch(ctx, m.Election, func(h backend.Holder) {
		if migrate.IsMarker(h) {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		m.TB.Fatalf("waiting for the marker on the old store: %v", err)
	}
}

// CheckTerms checks that at least minTerms terms ran on each side (epoch 0 on
// the old store, epoch 1 on the new), no other epoch, and no late replica.
func (m *Migration) CheckTerms(minTerms int) {
	m.TB.Helper()
	var n [2]int
	terms := m.Fence.Terms()
	for _, t := range terms {
		ep, _ := migrate.SplitToken(t.Token)
		if ep > 1 || t.Identity == LateUnmodified || t.Identity == LatePhaseOld {
			m.TB.Errorf("term %v (epoch %d): want epoch 0 or 1 and no late replica", t, ep)
			continue
		}
		n[ep]++
	}
	if n[0] < minTerms || n[1] < minTerms {
		m.TB.Errorf("got %d terms on the old side and %d on the new; want at least %d of each", n[0], n[1], minTerms)
	}
	m.TB.Logf("%d terms: %d on the old side (epoch 0), %d on the new (epoch 1); %d stale tokens", len(terms), n[0], n[1], m.Fence.Stale())
}

// Run rolls the migration (Roll), checks the terms (at least minTerms on
// each side), that the late PhaseOld replica was refused naming runbook
// step 3, that the old store reports the marker as the holder, and that
// migrate.Cleanup removes it once and then reports ErrNotMarked.
func (m *Migration) Run(ctx context.Context, minTerms int) {
	m.TB.Helper()
	lateErr := m.Roll()
	m.CheckTerms(minTerms)
	if !errors.Is(lateErr, backend.ErrInvalid) || !strings.Contains(lateErr.Error(), "step 3") {
		m.TB.Errorf("late PhaseOld replica: got Run error %v; want ErrInvalid naming runbook step 3", lateErr)
	}
	ob := m.Old(m.TB)
	defer ob.Close()
	if h, err := ob.Leader(ctx, m.Election); err != nil || h.Identity != migrate.MarkerPrefix+m.NewName {
		m.TB.Errorf("old store's holder after the migration: got %+v, %v; want the marker", h, err)
	}
	marker, ok := ob.(migrate.Marker)
	if !ok {
		m.TB.Fatalf("old backend %T implements no migrate.Marker", ob)
	}
	if _, err := migrate.Cleanup(ctx, marker, m.Election); err != nil {
		m.TB.Fatal(err)
	}
	if h, err := ob.Leader(ctx, m.Election); !errors.Is(err, backend.ErrNoLeader) {
		m.TB.Errorf("old store's holder after Cleanup: got %+v, %v; want none", h, err)
	}
	if _, err := migrate.Cleanup(ctx, marker, m.Election); !errors.Is(err, migrate.ErrNotMarked) {
		m.TB.Errorf("second Cleanup: got %v; want ErrNotMarked", err)
	}
}
