package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Watch implements [backend.Watcher] with ZooKeeper watches: while there is a
// holder it watches the holder's znode only; while there is none, the
// election's children (or, before the election znode exists, its creation).
// It reads on one session for its whole run (see Leader for which) and
// returns an error when that session expires, since its watches end with it.
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	if err := validateElection(election); err != nil {
		return err
	}
	s, err := b.reader(ctx)
	if err != nil {
		return wrap("watch", election, err)
	}
	dir := b.electionPath(election)
	var last backend.Holder
	first := true
	for {
		h, ch, err := b.holder(ctx, s, election, true)
		if err != nil {
			return wrap("watch", election, err)
		}
		if h.IsZero() {
			// Nobody leads: watch for a candidate to appear, then look again.
			ch, err = do(b, ctx, func() (<-chan zk.Event, error) {
				kids, _, ch, err := s.conn.ChildrenW(dir)
				if errors.Is(err, zk.ErrNoNode) {
					var ok bool
					ok, _, ch, err = s.conn.ExistsW(dir)
					if err == nil && ok {
						return nil, nil // created meanwhile: look again
					}
					return ch, err
				}
				for _, k := range kids {
					if _, ok := parseCandidate(k); ok {
						return nil, nil // a candidate arrived: look again
					}
				}
				return ch, err
			}, nil)
			if err != nil {
				return wrap("watch", election, err)
			}
			if ch == nil {
				continue
			}
		}
		if first || h != last {
			fn(h)
			last, first = h, false
		}
		select {
		case ev := <-ch:
			if ev.Type == zk.EventNotWatching {
				if b.isClosed() {
					return errClosed
				}
				return fmt.Errorf("zookeeper: watch %q: %w", election, ev.Err)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-b.done:
			return errClosed
		}
	}
}
