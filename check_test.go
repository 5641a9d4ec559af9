package elector

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend/memory"
)

func TestCheckReportsStuckOnElected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		rec := newRecorder()
		release := make(chan struct{})
		rec.hold = func(ctx context.Context, _ Term) {
			<-ctx.Done()
			<-release // ignores its ctx
		}
		r := start(t, b, rec.options("alice"))
		rec.next(t, "elected")
		assert.NoError(t, r.e.Check())
		b.Expire("jobs")
		time.Sleep(ttl / 2)
		assert.NoError(t, r.e.Check(), "a callback still finishing within TTL is healthy")
		time.Sleep(ttl)
		err := r.e.Check()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "OnElected has not returned")
		close(release)
		rec.next(t, "revoked")
		assert.NoError(t, r.e.Check())
		require.Same(t, context.Canceled, r.stop(t))
	})
}

// TestUnreachableBackendIsReported: a backend that cannot be reached from
// the start is logged at Warn at the first failure and again periodically,
// reported as campaign error events, and by Check once campaigning has
// failed for longer than TTL; all of it ends when the backend is reachable.
func TestUnreachableBackendIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := memory.New()
		b.Isolate()
		logs := &warnings{}
		rec := newRecorder()
		o := rec.options("alice")
		o.Logger = slog.New(logs)
		var mu sync.Mutex
		var failed int
		o.Observer = func(ev Event) {
			if ev.Kind == EventCampaign && errors.Is(ev.Err, memory.ErrIsolated) {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}
		began := time.Now()
		r := start(t, b, o)
		synctest.Wait()
		first := logs.warns()
		require.Len(t, first, 1, "the first failure is a warning at once")
		assert.Equal(t, began, first[0].at)
		assert.Contains(t, first[0].msg, "campaign failed")
		assert.ErrorIs(t, first[0].err, memory.ErrIsolated, "the warning names the cause")
		assert.NoError(t, r.e.Check(), "failing for less than TTL is still healthy")

		time.Sleep(ttl + time.Second)
		err := r.e.Check()
		require.Error(t, err, "failing for longer than TTL")
		assert.ErrorIs(t, err, memory.ErrIsolated)
		assert.Contains(t, err.Error(), "campaigning has failed for")
		mu.Lock()
		assert.Greater(t, failed, 3, "every failed attempt is an event")
		mu.Unlock()

		time.Sleep(20*time.Second - ttl - time.Second)
		ws := logs.warns()
		assert.GreaterOrEqual(t, len(ws), 4, "warned again periodically (every 5 s): %v", ws)
		assert.LessOrEqual(t, len(ws), 5, "but not at every attempt: %v", ws)
		for i := 1; i < len(ws); i++ {
			assert.GreaterOrEqual(t, ws[i].at.Sub(ws[i-1].at), warnRepeat)
		}

		b.Heal()
		rec.next(t, "elected")
		assert.NoError(t, r.e.Check(), "healthy once elected")
		require.Same(t, context.Canceled, r.stop(t))
		rec.next(t, "revoked")
	})
}

// TestWaitingBehindLeaderIsHealthy: a campaign queued behind another
// leader for many TTLs is not a failure.
func TestWaitingBehindLeaderIsHealthy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hb := memory.New()
		holder := newRecorder()
		r2 := start(t, hb, holder.options("bob"))
		holder.next(t, "elected")
		b := hb.Peer()
		b.Isolate()
		rec := newRecorder()
		r := start(t, b, rec.options("alice"))
		time.Sleep(2 * ttl) // failing, then …
		require.Error(t, r.e.Check())
		b.Heal() // … the backend is back, and alice queues behind bob
		time.Sleep(10 * ttl)
		rec.none(t)
		assert.NoError(t, r.e.Check(), "waiting behind a leader is healthy")
		require.Same(t, context.Canceled, r.stop(t))
		require.Same(t, context.Canceled, r2.stop(t))
		holder.next(t, "revoked")
	})
}

// warnings is a slog.Handler that records Warn records.
type warnings struct {
	mu  sync.Mutex
	rec []warning
}

type warning struct {
	at  time.Time
	msg string
	err error
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return nil
	}
	wr := warning{at: r.Time, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if e, ok := a.Value.Any().(error); ok && a.Key == "error" {
			wr.err = e
		}
		return true
	})
	w.mu.Lock()
	w.rec = append(w.rec, wr)
	w.mu.Unlock()
	return nil
}

func (w *warnings) warns() []warning {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]warning(nil), w.rec...)
}
