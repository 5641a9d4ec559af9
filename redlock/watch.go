package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
)

// WatchPollInterval is how often [Backend.Watch] reads an election that has
// no leader. Elections are announced only when released, not when won, so a
// leaderless election is polled; a held one is read again when the holder's
// keys can have expired, or at once when a release is announced.
const WatchPollInterval = 100 * time.Millisecond

var _ backend.Watcher = (*Backend)(nil)

// Watch implements [backend.Watcher]. It calls fn with the holder of
// election as [Backend.Leader] reports it (the zero Holder when there is
// none), then again each time the holder (identity or token) changes. It
// reads the election again when a release is announced on the nodes, when
// the holder's TTL has run out, and every [WatchPollInterval] while there is
// no leader. It returns ctx.Err() when ctx ends, [backend.ErrClosed] when the
// Backend closes, and the error of a read that reached too few nodes.
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	if err := b.check(election); err != nil {
		return err
	}
	w, err := b.notify.register(ctx, b.lockKey(election), "") // woken by every release
	defer b.notify.unregister(w)
	if err != nil {
		return err
	}
	var last backend.Holder
	for first := true; ; first = false {
		w.drain()
		h, err := b.Leader(ctx, election)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, backend.ErrNoLeader):
			h = backend.Holder{}
		case err != nil:
			return err
		}
		if first || h.Identity != last.Identity || h.Token != last.Token || h.IsZero() != last.IsZero() {
			fn(h)
		}
		last = h
		wait := WatchPollInterval
		if !h.IsZero() && h.TTL > 0 {
			wait = h.TTL + time.Millisecond
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-b.done:
			t.Stop()
			return fmt.Errorf("redlock: watch %q: %w", election, backend.ErrClosed)
		case <-w.ch:
			t.Stop()
		case <-t.C:
		}
	}
}
