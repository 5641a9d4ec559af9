package kube

import (
	"context"
	"errors"
	"time"

	"github.com/leaderkit/elector/backend"
)

// followRetry is how long a held lease's watch waits before it is started
// again after it failed (an unreachable apiserver): renewals fail meanwhile
// too, and the Deadline ends the lease if they keep failing.
const followRetry = 500 * time.Millisecond

// follow watches the Lease of l from the version l wrote until l ends or
// the Backend is closed, and finishes l as soon as an event shows the Lease
// not naming it any more: another writer took it over (a client-go
// candidate, kubectl), released it for it, or deleted it. The holder then
// learns of the loss from the apiserver's event, not at its next renewal.
func (l *lease) follow() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.lost:
		case <-l.b.done:
		case <-ctx.Done():
		}
		cancel()
	}()
	l.mu.Lock()
	w := &waiter{b: l.b, name: l.name, obj: l.obj, rv: l.obj.ResourceVersion}
	l.mu.Unlock()
	defer w.stop()
	for {
		err := w.wait(ctx, time.Time{})
		switch {
		case ctx.Err() != nil, errors.Is(err, backend.ErrClosed):
			return
		case err != nil:
			t := time.NewTimer(followRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if w.obj == nil || !l.o.owns(w.obj) {
			l.foreign()
			return
		}
	}
}

// foreign ends l after its watch showed another writer's change: Lost
// closes at once, even while a renewal holds l.mu, and the renewal after it
// returns an error wrapping [backend.ErrLost].
func (l *lease) foreign() {
	if l.ended.Load() {
		return // released or marked by its holder, or already lost
	}
	l.finish()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gone = true
	l.b.forget(l)
}
