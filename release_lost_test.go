package elector

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/internal/testenv"
)

// lostReleases makes a backend's Release of a lease already lost return
// an error wrapping backend.ErrLost, as the etcd and ZooKeeper drivers do
// (the memory driver returns nil, which the contract also allows).
type lostReleases struct{ backend.Backend }

type lostRelease struct{ backend.Lease }

func (b lostReleases) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	l, err := b.Backend.Campaign(ctx, c)
	if err != nil {
		return nil, err
	}
	return lostRelease{l}, nil
}

func (l lostRelease) Release(ctx context.Context) error {
	select {
	case <-l.Lost():
		return fmt.Errorf("test: release: key was already gone: %w", backend.ErrLost)
	default:
		return l.Lease.Release(ctx)
	}
}

// TestReleaseOfLostLeaseIsNoWarning: the release that follows a lost lease
// finds it gone; that is no failure (the lease does not "lapse after its
// TTL": it is gone already), so it is not logged as a warning. The loss
// itself is the one warning.
func TestReleaseOfLostLeaseIsNoWarning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		rec := newRecorder()
		opts := rec.options("alice")
		var logs testenv.Buffer
		opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e, err := New(lostReleases{store}, "jobs", opts)
		require.NoError(t, err)
		r := run(t, e)
		rec.next(t, "elected")
		time.Sleep(ttl / 2)
		require.True(t, store.Expire("jobs"))
		rv := rec.next(t, "revoked")
		require.ErrorIs(t, rv.reason, backend.ErrLost)
		require.Same(t, context.Canceled, r.stop(t))
		out := logs.String()
		assert.Contains(t, out, `level=WARN msg="term ended"`, "the loss is a warning")
		assert.NotContains(t, out, "release failed", "a release that finds the lease gone is no failure:\n%s", out)
		assert.Contains(t, out, "release: the lease was already gone", "the release is still logged (debug)")
	})
}

// TestCloseUnderTerm: a Backend closed from OnElected ends the term with a
// reason that says so (wrapping backend.ErrClosed as well as ErrLeaseLost),
// the release that finds the lease finished by Close is no warning, and Run
// returns an error wrapping backend.ErrClosed.
func TestCloseUnderTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		rec := newRecorder()
		rec.hold = func(ctx context.Context, _ Term) {
			_ = store.Close()
			<-ctx.Done()
		}
		opts := rec.options("alice")
		var logs testenv.Buffer
		opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		e, err := New(store, "jobs", opts)
		require.NoError(t, err)
		r := run(t, e)
		rec.next(t, "elected")
		rv := rec.next(t, "revoked")
		require.ErrorIs(t, rv.reason, backend.ErrClosed, "the reason names the Close")
		require.ErrorIs(t, rv.reason, ErrLeaseLost)
		select {
		case err := <-r.done:
			require.ErrorIs(t, err, backend.ErrClosed)
		case <-time.After(time.Minute):
			t.Fatal("Run still running a minute after its Backend was closed")
		}
		out := logs.String()
		assert.NotContains(t, out, "release failed", "Close finished the lease; its release failed nothing:\n%s", out)
	})
}
