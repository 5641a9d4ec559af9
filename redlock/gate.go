package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/aimd"
)

// Bounds of a Backend's campaign gate (see gate).
const (
	gateMin  = 4
	gateInit = 8
	gateMax  = 256
)

// gate bounds the acquire rounds a Backend has in flight with a congestion
// window (internal/aimd). A process that starts many campaigns at once
// (thousands of Electors, a partition assigner's cold start) sends one
// acquireScript per node for each. Unbounded, on a loaded host those
// requests queue behind each other past RequestTimeout, nearly every round
// fails, each failure is retried and cleaned up with more requests, and the
// renewals of the leases already won queue behind them until their terms
// end: a congestion collapse. The window grows with each round the nodes
// answered in time (won or lost to a holder) and halves when a round failed
// for want of timely replies; it stays between gateMin and gateMax.
//
// Only acquire rounds pass the gate. Renewals and releases do not: they keep
// the leases already held and free the store, and must not wait behind
// campaigns. A campaign waiting behind a holder sleeps outside the gate.
type gate struct {
	mu     sync.Mutex
	win    aimd.Window     // rounds allowed in flight
	active int             // rounds in flight
	queue  []chan struct{} // rounds waiting, oldest first; each channel has room for its grant
}

func newGate() *gate { return &gate{win: aimd.New(gateMin, gateInit, gateMax)} }

// enter waits for room for one round and returns when it got it; the
// caller passes that to leave. It returns ctx.Err() when ctx ends
// first and [backend.ErrClosed] when done is closed first, without taking
// room.
func (g *gate) enter(ctx context.Context, done <-chan struct{}) (time.Time, error) {
	g.mu.Lock()
	if g.active < g.win.Size() && len(g.queue) == 0 {
		g.active++
		g.mu.Unlock()
		return time.Now(), nil
	}
	ch := make(chan struct{}, 1)
	g.queue = append(g.queue, ch)
	g.mu.Unlock()
	var err error
	select {
	case <-ch:
		return time.Now(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-done:
		err = backend.ErrClosed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, c := range g.queue {
		if c == ch {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return time.Time{}, err
		}
	}
	// Granted meanwhile: give the room back.
	g.active--
	g.admit()
	return time.Time{}, err
}

// leave frees the room of a round that got it at began. slow reports that
// the round failed because too few nodes answered in time.
func (g *gate) leave(began time.Time, slow bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	if slow {
		g.win.Shrink(began, time.Now())
	} else {
		g.win.Grow()
	}
	g.admit()
}

// admit grants waiting rounds the room there is (g.mu held).
func (g *gate) admit() {
	for g.active < g.win.Size() && len(g.queue) > 0 {
		ch := g.queue[0]
		g.queue = g.queue[1:]
		g.active++
		ch <- struct{}{}
	}
}
