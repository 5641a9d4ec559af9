package elector

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// prio returns rec's options with a priority and a minimum term.
func prio(rec *recorder, id string, priority int, minTerm time.Duration) *Options {
	o := rec.options(id)
	o.Priority, o.MinTerm = priority, minTerm
	return o
}

// TestPreferredCandidateIsElectedNext: a leader yields to a higher
// candidate, and a lower candidate queued before the higher one arrived
// stands aside, so that the higher one is elected, at the instant the
// leader releases.
func TestPreferredCandidateIsElectedNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recC, recB := newRecorder(), newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 1, 0))
		elA := recA.next(t, "elected")
		rc := start(t, store.Peer(), prio(recC, "carol", 1, 0)) // queued behind alice
		time.Sleep(ttl)
		recA.none(t)
		recC.none(t)

		rb := start(t, store.Peer(), prio(recB, "bob", 3, 0))
		rv := recA.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrPreempted)
		elB := recB.next(t, "elected")
		assert.Equal(t, rv.at, elB.at, "the preferred candidate is elected at once")
		assert.Greater(t, elB.term.Token, elA.term.Token)
		time.Sleep(3 * ttl)
		recC.none(t) // carol, queued first, stood aside
		recA.none(t)

		list, err := rb.e.Candidates(t.Context())
		require.NoError(t, err)
		got := map[string]Entry{}
		for _, en := range list {
			en.ID = ""
			got[en.Identity] = en
		}
		assert.Equal(t, map[string]Entry{
			"alice": {Identity: "alice", Priority: 1, Aside: true},
			"carol": {Identity: "carol", Priority: 1, Aside: true},
			"bob":   {Identity: "bob", Priority: 3},
		}, got)

		// bob leaves: alice or carol is elected at once.
		require.Same(t, context.Canceled, rb.stop(t))
		rv = recB.next(t, "revoked")
		var el event
		select {
		case el = <-recA.ch:
		case el = <-recC.ch:
		}
		assert.Equal(t, "elected", el.kind)
		assert.Equal(t, rv.at, el.at)
		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rc.stop(t))
		list, err = ra.e.Candidates(t.Context())
		require.NoError(t, err)
		assert.Empty(t, list, "Run withdraws its entry on the way out")
	})
}

// TestMinTermDelaysTheYield: a leader yields no earlier than MinTerm after
// its term started.
func TestMinTermDelaysTheYield(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recB := newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 1, 10*ttl))
		elA := recA.next(t, "elected")
		time.Sleep(ttl)
		rb := start(t, store.Peer(), prio(recB, "bob", 2, 0))
		rv := recA.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrPreempted)
		assert.Equal(t, 10*ttl, rv.at.Sub(elA.at), "alice yields once she has led MinTerm")
		elB := recB.next(t, "elected")
		assert.Equal(t, rv.at, elB.at)
		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

// TestEqualPrioritiesNeverPreempt: a candidate of the leader's priority
// waits as without priorities.
func TestEqualPrioritiesNeverPreempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recB := newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 2, 0))
		recA.next(t, "elected")
		rb := start(t, store.Peer(), prio(recB, "bob", 2, 0))
		time.Sleep(10 * ttl)
		recA.none(t)
		recB.none(t)
		require.NoError(t, ra.e.Resign(t.Context()))
		recA.next(t, "revoked")
		recB.next(t, "elected")
		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

// TestStuckPreferredCandidateIsBounded: a higher candidate whose entry
// stays live but that never campaigns costs the election one yield and at
// most a TTL without a leader; then the others campaign, and the leader
// elected does not yield to it again.
func TestStuckPreferredCandidateIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recC := newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 1, 0))
		recA.next(t, "elected")
		rc := start(t, store.Peer(), prio(recC, "carol", 1, 0))
		withdraw := registerStuck(t, store)

		rv, el := yieldsOnceToStuck(t, recA, recC)
		gap := el.at.Sub(rv.at)
		assert.Greater(t, gap, time.Duration(0))
		assert.LessOrEqual(t, gap, ttl+ttl/3, "the election is without a leader for at most about a TTL")

		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rc.stop(t))
		withdraw()
	})
}

// registerStuck registers, on a peer of store, a candidate of priority 9
// whose entry stays live (its process refreshes it) but that never
// campaigns. The function returned withdraws it.
func registerStuck(t *testing.T, store *memory.Backend) func() {
	t.Helper()
	stuck := store.Peer()
	reg, err := stuck.Register(t.Context(), backend.Candidate{Election: "jobs", Identity: "stuck", TTL: ttl, Priority: 9}, false)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			_ = reg.Refresh(ctx)
			time.Sleep(ttl / 3)
		}
	})
	return func() {
		cancel()
		wg.Wait()
		require.NoError(t, stuck.Close())
	}
}

// yieldsOnceToStuck checks that alice yields to the stuck candidate, that
// alice or carol is elected next, and that then no term starts or ends for
// 10 TTL: no second yield. It returns the yield and the election.
func yieldsOnceToStuck(t *testing.T, recA, recC *recorder) (rv, el event) {
	t.Helper()
	rv = recA.next(t, "revoked")
	assert.ErrorIs(t, rv.reason, ErrPreempted)
	select {
	case el = <-recA.ch:
	case el = <-recC.ch:
	}
	require.Equal(t, "elected", el.kind)
	time.Sleep(10 * ttl)
	recA.none(t)
	recC.none(t)
	return rv, el
}

// TestStaleReadKeepsTheWatchedView: the read a candidate makes before it
// campaigns may be older than the watched view (it began before the view's
// last update). It must not replace the view: the watch does not deliver
// that update again, and the candidate would campaign blind to a higher
// one, win when the leader yields to that one, and yield a second time.
func TestStaleReadKeepsTheWatchedView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recC := newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 1, 0))
		recA.next(t, "elected")
		carol := &slowRead{Backend: store.Peer(), gate: make(chan struct{})}
		rc := start(t, carol, prio(recC, "carol", 1, 0))
		synctest.Wait() // carol's read before her campaign is held, as read

		withdraw := registerStuck(t, store)
		synctest.Wait() // every view has the stuck entry
		close(carol.gate)
		synctest.Wait()

		list, err := store.Entries(t.Context(), "jobs")
		require.NoError(t, err)
		for _, en := range list {
			if en.Identity == "carol" {
				assert.True(t, en.Aside, "carol defers to the higher entry her view had before her read returned")
			}
		}
		yieldsOnceToStuck(t, recA, recC)

		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rc.stop(t))
		withdraw()
	})
}

// slowRead is a memory Backend whose first Entries reads the registry at
// once but answers only when gate is closed.
type slowRead struct {
	*memory.Backend
	gate chan struct{}
	once sync.Once
}

func (b *slowRead) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	list, err := b.Backend.Entries(ctx, election)
	b.once.Do(func() { <-b.gate })
	return list, err
}

// TestCutOffPreferredCandidateIsNotWaitedFor: a higher candidate cut off
// from the store loses its entry within a TTL, and then the leader no
// longer yields to it.
func TestCutOffPreferredCandidateIsNotWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recA, recB := newRecorder(), newRecorder()
		ra := start(t, store, prio(recA, "alice", 1, 2*ttl))
		recA.next(t, "elected")
		bob := store.Peer()
		rb := start(t, bob, prio(recB, "bob", 2, 0))
		synctest.Wait()
		bob.Isolate()
		time.Sleep(10 * ttl)
		recA.none(t) // bob's entry lapsed before alice's MinTerm passed
		bob.Heal()
		rv := recA.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrPreempted)
		recB.next(t, "elected")
		require.Same(t, context.Canceled, ra.stop(t))
		require.Same(t, context.Canceled, rb.stop(t))
	})
}

// registryless hides the memory backend's Registry.
type registryless struct{ backend.Backend }

func TestNewValidatesPriority(t *testing.T) {
	b := memory.New()
	for _, tc := range []struct {
		name string
		b    backend.Backend
		opts *Options
		want string
	}{
		{"negative priority", b, &Options{Priority: -1}, "Options.Priority is -1; want 0 (no preference) or more"},
		{"negative min term", b, &Options{Priority: 1, MinTerm: -time.Second}, "Options.MinTerm is -1s; want 0 (yield at once) or more"},
		{"min term without priority", b, &Options{MinTerm: time.Second}, "Options.MinTerm is 1s but Priority is 0"},
		{"no registry", registryless{b}, &Options{Priority: 1}, "Options.Priority is 1 but the backend elector.registryless keeps no registry of candidates (it is not a backend.Registry)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.b, "jobs", tc.opts)
			assert.Nil(t, e)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "elector: "), "errors name the package: %q", err)
		})
	}
	_, err := New(registryless{b}, "jobs", nil)
	assert.NoError(t, err, "priority 0 needs no registry")
}

// TestResignedPreferredLeaderHandsOver: a preferred leader that resigns
// marks its entry aside before it releases, so a lower candidate is
// elected at once instead of deferring to it.
func TestResignedPreferredLeaderHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		recT, recL := newRecorder(), newRecorder()
		rt := start(t, store, prio(recT, "top", 2, 0))
		recT.next(t, "elected")
		rl := start(t, store.Peer(), prio(recL, "low", 1, 10*ttl))
		time.Sleep(ttl)
		require.NoError(t, rt.e.Resign(t.Context()))
		rv := recT.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, ErrResigned)
		el := recL.next(t, "elected")
		assert.Equal(t, rv.at, el.at, "the lower candidate is elected at once")
		require.Same(t, context.Canceled, rt.stop(t))
		require.Same(t, context.Canceled, rl.stop(t))
	})
}
