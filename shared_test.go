package elector

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/term"
)

// stallBackend is a memory Backend cut off from its store on demand: then
// the renewals of election stall block until their ctx ends, holding the
// lease's lock (Deadline included, as a Redlock lease holds it for a whole
// round), and the others' fail at once.
type stallBackend struct {
	*memory.Backend
	stall string
	cut   atomic.Bool
}

func (b *stallBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return &stallLease{Lease: l, b: b, stall: c.Election == b.stall, mu: make(chan struct{}, 1)}, nil
}

// stallLease's lock is a channel: testing/synctest counts a goroutine
// waiting on a channel as blocked, not one waiting on a mutex.
type stallLease struct {
	backend.Lease
	b     *stallBackend
	stall bool
	mu    chan struct{}
}

func (l *stallLease) Deadline() time.Time {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return l.Lease.Deadline()
}

func (l *stallLease) Renew(ctx context.Context) error {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	switch {
	case l.b.cut.Load() && l.stall:
		<-ctx.Done()
		return ctx.Err()
	case l.b.cut.Load():
		return errors.New("connection refused")
	}
	return l.Lease.Renew(ctx)
}

// Terms of one Backend share the term engine, and a renewal that stalls,
// holding its lease's lock, delays no other term's step-down: cut off from
// the store, the elector whose renewals fail at once steps down at its own
// step-down point (3.4 s after it was elected, its last renewal 1 s after),
// not at the stalled one's (4.1 s).
func TestStalledRenewalDelaysNoOtherTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &stallBackend{Backend: memory.New(), stall: "stall"}
		defer b.Close()
		recFree, recStall := newRecorder(), newRecorder()
		ef, err := New(b, "free", recFree.options("free"))
		require.NoError(t, err)
		es, err := New(b, "stall", recStall.options("stall"))
		require.NoError(t, err)
		rf := run(t, ef)
		el := recFree.next(t, "elected")
		time.Sleep(700 * time.Millisecond)
		rs := run(t, es)
		recStall.next(t, "elected")
		time.Sleep(time.Until(el.at.Add(1800 * time.Millisecond)))
		b.cut.Store(true)

		rv := recFree.next(t, "revoked")
		assert.ErrorIs(t, rv.reason, term.ErrNoRenewal)
		assert.Equal(t, 3400*time.Millisecond, rv.at.Sub(el.at),
			"free's step-down after its election: at its own step-down point, whatever the stalled renewal of another term")
		rs2 := recStall.next(t, "revoked")
		assert.Equal(t, 4100*time.Millisecond, rs2.at.Sub(el.at), "stall's step-down after free's election: its own step-down point")
		b.cut.Store(false)
		assert.ErrorIs(t, rf.stop(t), context.Canceled)
		assert.ErrorIs(t, rs.stop(t), context.Canceled)
	})
}
