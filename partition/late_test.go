package partition

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestNoAssignmentPastStepDown: a member stopped between winning a
// partition and starting its OnAssigned (SIGSTOP, a paused VM) for longer
// than the lease lasts does not start OnAssigned when it resumes: another
// member owns the partition by then. In the partition chaos on ZooKeeper
// such a member started OnAssigned 2 ms after it resumed, 1.5 s after
// another member had won the partition with a higher token; the fence
// refused its write, the checker counted two owners at once. Neither is
// OnRevoked called, as OnAssigned was not.
func TestNoAssignmentPastStepDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const group = "late"
		store := memory.New()
		defer store.Close()
		ab := store.Peer()
		g := newLedger(t)
		a, err := New(ab, group, 1, g.options("a"))
		if err != nil {
			t.Fatal(err)
		}

		// a's loop stops in its OnAssigned's goroutine, before the
		// deadline check, until resumed.
		stopped, resume := make(chan struct{}), make(chan struct{})
		l := newLoop(a)
		l.settled, l.plan.probed, l.plan.owners = true, true, []string{""}
		var once sync.Once // later wins run on
		l.beforeAssigned = func(int) {
			once.Do(func() {
				close(stopped)
				<-resume
			})
		}
		views := make(chan view, 1)
		views <- view{members: []string{"a"}, joined: true, complete: true}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- l.run(ctx, views, nil, func() {}) }()

		<-stopped
		// Stopped, a renews nothing: its lease lapses and b wins.
		ab.Isolate()
		won, err := store.Peer().Campaign(ctx, backend.Candidate{Election: Election(group, 0), Identity: "b", TTL: a.opts.TTL})
		if err != nil {
			t.Fatal(err)
		}
		g.assigned("b", Assignment{Group: group, Partition: 0, Token: won.Token()})
		close(resume)
		synctest.Wait()

		g.mu.Lock()
		for _, line := range g.log {
			if strings.HasPrefix(line, "assigned a ") {
				t.Errorf("a's OnAssigned ran after a resumed past its lease's step-down point, while b owned the partition: %q", line)
			}
		}
		g.mu.Unlock()
		if owned := a.Owned(); len(owned) != 0 {
			t.Errorf("a reports owning %v after resuming past the step-down point; want nothing", owned)
		}
		ab.Heal()
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("loop returned %v; want context.Canceled", err)
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, line := range g.log {
			if strings.HasPrefix(line, "revoked a ") {
				t.Errorf("OnRevoked ran for a term whose OnAssigned did not: %q", line)
			}
		}
	})
}

// TestNoAssignmentAfterRunEnds: a partition won once Run's context has
// ended starts no term (no OnAssigned, no OnRevoked) and is given back,
// even when the loop takes the campaign's result before it sees the
// context end (its select picks either when both are ready).
func TestNoAssignmentAfterRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const group = "ended"
		store := memory.New()
		defer store.Close()
		g := newLedger(t)
		a, err := New(store.Peer(), group, 1, g.options("a"))
		if err != nil {
			t.Fatal(err)
		}
		l := newLoop(a)
		ctx, cancel := context.WithCancel(t.Context())
		l.placed[0] = true
		l.campaign(ctx, 0, true)
		r := <-l.campaigned
		if r.err != nil {
			t.Fatalf("campaign: %v", r.err)
		}
		cancel()
		l.onCampaign(ctx, r)
		synctest.Wait()

		if len(l.parts) != 0 {
			t.Errorf("the loop holds %d partitions won after its context ended; want none", len(l.parts))
		}
		if g.count() != 0 {
			t.Errorf("callbacks ran for a partition won after Run's context ended: %q", g.log)
		}
		if l.strays != 1 {
			t.Fatalf("%d leases being given back; want the one won", l.strays)
		}
		<-l.strayDone
		if h, err := store.Peer().Leader(t.Context(), Election(group, 0)); !errors.Is(err, backend.ErrNoLeader) {
			t.Errorf("the partition won after Run's context ended is still held (%+v, %v); want it released", h, err)
		}
	})
}
