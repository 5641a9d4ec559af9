package elector

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestNoTermPastStepDown: an elector stopped between winning and starting
// OnElected (SIGSTOP, a paused VM) for longer than the lease lasts does not
// start OnElected when it resumes, as another candidate may lead by then;
// nor does it call OnRevoked. It campaigns again, and leads once the other
// lease has lapsed. (A partition owner did start its callback 2 ms after
// resuming, in the partition chaos on ZooKeeper.)
func TestNoTermPastStepDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		ab := store.Peer()
		rec := newRecorder()
		e, err := New(ab, "jobs", rec.options("alice"))
		require.NoError(t, err)
		stopped, resume := make(chan struct{}), make(chan struct{})
		first := true
		e.beforeElected = func() {
			if first {
				first = false
				close(stopped)
				<-resume
			}
		}
		r := run(t, e)

		<-stopped
		// Stopped, alice renews nothing: her lease lapses and bob wins.
		ab.Isolate()
		bob, err := store.Peer().Campaign(t.Context(), backend.Candidate{Election: "jobs", Identity: "bob", TTL: ttl})
		require.NoError(t, err)
		close(resume)
		synctest.Wait()
		rec.none(t)

		// Bob's lease lapses (nobody renews it): alice leads again, with a
		// higher token.
		ab.Heal()
		el := rec.next(t, "elected")
		assert.Greater(t, el.term.Token, bob.Token())
		require.Same(t, context.Canceled, r.stop(t))
		rv := rec.next(t, "revoked")
		assert.Equal(t, el.term.Token, rv.term.Token)
	})
}

// cancelOnWin is a Backend whose Campaign ends Run's context as it wins,
// as when a store hands the lease over just as the process shuts down.
type cancelOnWin struct {
	backend.Backend
	cancel context.CancelFunc
}

func (b cancelOnWin) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	b.cancel()
	return l, err
}

// TestNoTermAfterRunEnds: a lease won once Run's context has ended starts
// no term (no OnElected, no OnRevoked) and is given back; Run returns the
// context's error. (The root package's Example hung when such a term's
// OnElected wrote to a channel nobody read any more.)
func TestNoTermAfterRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		ctx, cancel := context.WithCancel(t.Context())
		rec := newRecorder()
		e, err := New(cancelOnWin{store.Peer(), cancel}, "jobs", rec.options("alice"))
		require.NoError(t, err)
		require.ErrorIs(t, e.Run(ctx), context.Canceled)
		rec.none(t)
		h, err := store.Peer().Leader(t.Context(), "jobs")
		assert.ErrorIs(t, err, backend.ErrNoLeader, "the lease won as Run ended is released: got holder %+v", h)
	})
}
