package redlock

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/aimd"
)

// TestGateWindow: the gate grows by one per answered round until a slow
// one, halves once per window's worth of slow rounds, then grows by one per
// window's worth of answered rounds, within [gateMin, gateMax].
func TestGateWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		ctx := context.Background()
		round := func(slow bool) time.Time {
			began, err := g.enter(ctx, nil)
			require.NoError(t, err)
			g.leave(began, slow)
			return began
		}
		for range 4 {
			round(false)
		}
		assert.Equal(t, gateInit+4, g.win.Size(), "slow start: one more per answered round")

		// Two slow rounds that entered before the cut halve it once.
		b1, _ := g.enter(ctx, nil)
		b2, _ := g.enter(ctx, nil)
		time.Sleep(time.Millisecond)
		g.leave(b1, true)
		g.leave(b2, true)
		assert.Equal(t, (gateInit+4)/2, g.win.Size(), "one cut per round of failures")

		// A slow round that entered after the cut cuts again.
		time.Sleep(time.Millisecond)
		round(true)
		assert.Equal(t, max(gateMin, (gateInit+4)/4), g.win.Size())
		round(true)
		round(true)
		assert.Equal(t, gateMin, g.win.Size(), "never below gateMin")

		// After a cut: one more per window's worth of answered rounds.
		for range gateMin - 1 {
			round(false)
		}
		assert.Equal(t, gateMin, g.win.Size())
		round(false)
		assert.Equal(t, gateMin+1, g.win.Size())

		g = &gate{win: aimd.New(gateMin, gateMax, gateMax)}
		round(false)
		assert.Equal(t, gateMax, g.win.Size(), "never above gateMax")
		assert.Zero(t, g.active)
	})
}

// TestGateQueue: rounds beyond the window wait, are admitted oldest first
// as room frees up, and a waiter whose ctx ends or whose Backend closes
// leaves without taking room.
func TestGateQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := &gate{win: aimd.New(1, 1, gateMax)}
		done := make(chan struct{})
		first, err := g.enter(context.Background(), done)
		require.NoError(t, err)

		admitted := make(chan int, 3)
		release := make(chan struct{})
		for i := range 3 {
			go func() {
				began, err := g.enter(context.Background(), done)
				if err != nil {
					return
				}
				admitted <- i
				<-release
				g.leave(began, false)
			}()
			synctest.Wait() // queued in this order
		}
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() { _, err := g.enter(ctx, done); gaveUp <- err }()
		synctest.Wait()
		assert.Len(t, g.queue, 4)
		assert.Empty(t, admitted, "nobody enters while the window is full")

		cancel()
		assert.ErrorIs(t, <-gaveUp, context.Canceled)
		assert.Len(t, g.queue, 3, "a cancelled waiter leaves the queue")

		g.leave(first, false) // the window grows to 2: the two oldest enter
		synctest.Wait()
		assert.ElementsMatch(t, []int{0, 1}, []int{<-admitted, <-admitted})
		assert.Len(t, g.queue, 1, "the youngest still waits")
		close(release)
		assert.Equal(t, 2, <-admitted)
		synctest.Wait()
		assert.Zero(t, g.active)

		// A full gate and a closing Backend.
		g = &gate{win: aimd.New(1, 1, gateMax)}
		_, err = g.enter(context.Background(), done)
		require.NoError(t, err)
		closed := make(chan error, 1)
		go func() { _, err := g.enter(context.Background(), done); closed <- err }()
		synctest.Wait()
		close(done)
		assert.ErrorIs(t, <-closed, backend.ErrClosed)
		assert.Empty(t, g.queue)
		assert.Equal(t, 1, g.active, "only the round that entered holds room")
	})
}

// TestGateGrantedWhileLeaving: a waiter whose ctx ends as it is granted
// room gives the room back, to the next waiter.
func TestGateGrantedWhileLeaving(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := &gate{win: aimd.New(1, 1, gateMax)}
		first, err := g.enter(context.Background(), nil)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() { _, err := g.enter(ctx, nil); gaveUp <- err }()
		synctest.Wait()
		entered := make(chan struct{})
		go func() {
			began, err := g.enter(context.Background(), nil)
			if err == nil {
				close(entered)
				g.leave(began, false)
			}
		}()
		synctest.Wait()

		// The first waiter's ctx ends as the room is granted to it:
		// whichever it sees first, the room must end with the next waiter.
		cancel()
		g.leave(first, false)

		assert.ErrorIs(t, <-gaveUp, context.Canceled)
		<-entered // the room went on to the next waiter
		synctest.Wait()
		assert.Zero(t, g.active)
		assert.Empty(t, g.queue)
	})
}
