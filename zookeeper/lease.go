package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// lease is a candidate znode that is first in its election.
type lease struct {
	b          *Backend
	s          *session // the session of the lease's TTL
	election   string
	path       string
	token      uint64
	session    int64 // the session id that owns the znode
	lost       chan struct{}
	watchState // of the znode's watch, for Renew (see share.go)

	mu       sync.Mutex
	gone     bool      // lost, released or closed; lost is closed
	released bool      // gone through Release
	deadline time.Time // latest Deadline reported
}

var _ backend.Lease = (*lease)(nil)

// newLease registers the lease of a candidate that found its znode first,
// and starts the goroutine that watches its znode (armed by watch, or by
// the goroutine when watch is nil) and its session.
func (b *Backend) newLease(s *session, c backend.Candidate, path string, token uint64, id int64, watch <-chan zk.Event) (*lease, error) {
	l := &lease{b: b, s: s, election: c.Election, path: path, token: token, session: id, lost: make(chan struct{})}
	st, changed := s.state()
	switch {
	case st.closed:
		return nil, errClosed
	case st.id != id:
		return nil, errSessionEnded
	case !st.up && s.grace == 0:
		// Disconnected after the check: under the default policy that ends
		// the lease before it starts.
		return nil, zk.ErrConnectionClosed
	}
	l.deadline, _ = s.deadline(id, b.cfg.drift)
	l.armedAt(0, false)
	if err := b.track(l); err != nil {
		return nil, err
	}
	s.watchFor(l)
	go l.watch(watch, st.epoch, changed)
	return l, nil
}

// watch ends the lease when its znode is deleted behind its back (by another
// client, or with the session), and when its session says so: expired,
// disconnected (at once, or past the grace), or reconnected without the
// znode.
func (l *lease) watch(znode <-chan zk.Event, epoch uint64, changed <-chan struct{}) {
	defer l.b.wg.Done()
	g := l.fires.Load()
	if znode == nil {
		var held bool
		if znode, held = l.arm(); !held {
			l.end(false, false)
			return
		}
		l.armedAt(g, znode != nil)
	} else {
		// An event of the watch that came before the lease was
		// registered waits in the channel.
		l.armedAt(g, len(znode) == 0)
	}
	for {
		select {
		case <-l.lost:
			return
		case ev := <-znode:
			l.armedAt(0, false)
			g := l.fires.Load()
			var held bool
			if znode, held = l.rearm(ev); !held {
				l.end(false, false)
				return
			}
			l.armedAt(g, znode != nil)
		case <-changed:
			var st state
			st, changed = l.s.state()
			var held bool
			if epoch, held = l.follow(st, epoch); !held {
				return
			}
		}
	}
}

// rearm handles an event of the znode's watch and returns the next watch
// channel (nil when it cannot tell: Renew and reconnection checks still
// can), or false when the znode is gone.
func (l *lease) rearm(ev zk.Event) (<-chan zk.Event, bool) {
	if ev.Type == zk.EventNotWatching || ev.Type == zk.EventNodeDeleted {
		return nil, false
	}
	return l.arm()
}

// arm sets a watch on the lease's znode and returns its channel (nil when
// it cannot tell), or false when the znode is gone or not the session's.
func (l *lease) arm() (<-chan zk.Event, bool) {
	_, st, ch, err := l.s.conn.GetW(l.path)
	switch {
	case err == nil:
		return ch, st.EphemeralOwner == l.session
	case errors.Is(err, zk.ErrNoNode):
		return nil, false
	default:
		return nil, true
	}
}

// follow applies a change of the session to the lease, whose znode was last
// known to be there in disconnection epoch, and returns the epoch it is now
// known in, or false once the lease has ended.
func (l *lease) follow(st state, epoch uint64) (uint64, bool) {
	switch {
	case st.closed || st.id != l.session:
		// Closed or expired: the znode went with the session.
		l.end(false, false)
		return epoch, false
	case !st.up && (l.s.grace == 0 || st.lapsed):
		// The session may still be alive: have the znode deleted once it
		// is reachable, so that a candidate told it lost keeps nobody
		// waiting.
		l.end(false, true)
		return epoch, false
	case st.up && st.epoch != epoch:
		// Reconnected within the grace: check that the znode is still
		// there and ours before trusting it again.
		if !l.s.settle() {
			return epoch, true // closed: the next change ends the lease
		}
		ok, stat, err := l.s.conn.Exists(l.path)
		switch {
		case err != nil:
			return epoch, true // the next change checks again
		case !ok || stat.EphemeralOwner != l.session:
			l.end(false, false)
			return epoch, false
		}
		return st.epoch, true
	}
	return epoch, true
}

// end ends the lease once: it closes Lost and unregisters the lease. With
// keep set its znode may still exist (the session may be alive) and is
// deleted as soon as the session is reachable. A later call returns only
// once the lease is unregistered, and records a release.
func (l *lease) end(released, keep bool) {
	l.mu.Lock()
	if l.gone {
		// Ended already, e.g. by the watch goroutine on the event of
		// Release's own delete, which the server sends before the
		// delete's reply: the lease may still be registered for a
		// moment in Guard's table, and the caller must not return
		// before it is not.
		l.released = l.released || released
		l.mu.Unlock()
		l.b.forget(l)
		return
	}
	l.gone, l.released = true, released
	close(l.lost)
	l.mu.Unlock()
	l.b.forget(l)
	l.s.unwatch(l)
	if keep {
		l.s.janitor.abandon(l.path, l.session, false)
	}
}

// Token returns the czxid of the candidate znode: the zxid of the
// transaction that created it, unique and increasing across the ensemble.
func (l *lease) Token() uint64 { return l.token }

// Deadline returns [backend.LeaseDeadline] of the send time of the last
// request the servers answered on the lease's session and the session's
// negotiated timeout (the TTL). Pings move it forward while the lease is
// held; it stops moving once the lease is gone.
func (l *lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		if d, ok := l.s.deadline(l.session, l.b.cfg.drift); ok && d.After(l.deadline) {
			l.deadline = d
		}
	}
	return l.deadline
}

// Lost returns a channel closed when the lease ends.
func (l *lease) Lost() <-chan struct{} { return l.lost }

// state reports whether the lease is gone, and whether through Release.
func (l *lease) state() (gone, released bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gone, l.released
}

// Renew proves that the lease's session is alive and its znode still its
// own, with a request of the session answered after Renew began. While the
// znode's watch is armed and has not fired, its deletion would have been
// reported before that answer, so the request need not read the znode and
// is shared by the session's concurrent renewals (see share.go): leases
// renewed together cost one request, not one each. Otherwise Renew reads
// its znode. The Deadline is [backend.LeaseDeadline] of the send time of
// the newest answered request of the session and the negotiated timeout.
func (l *lease) Renew(ctx context.Context) error {
	if gone, _ := l.state(); gone {
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	}
	start := time.Now()
	if !l.watching() {
		return l.read(ctx)
	}
	if _, err := l.s.fresh(ctx, start, l.read); err != nil {
		return err
	}
	if _, ok := l.s.deadline(l.session, l.b.cfg.drift); !ok {
		l.end(false, false)
		return fmt.Errorf("zookeeper: renew %q: the session ended: %w", l.election, backend.ErrLost)
	}
	if gone, _ := l.state(); gone {
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	}
	if !l.watching() {
		return l.read(ctx) // the watch fired: see what happened to the znode
	}
	return nil
}

// read makes one round trip that reads the candidate znode, proving that
// the session is alive and the znode still its own.
func (l *lease) read(ctx context.Context) error {
	st, err := do(l.b, ctx, func() (*zk.Stat, error) {
		ok, st, err := l.s.conn.Exists(l.path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	}, nil)
	switch {
	case err == nil && st.EphemeralOwner == l.session:
		return nil
	case err == nil, errors.Is(err, zk.ErrNoNode):
		l.end(false, false)
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	default:
		return wrap("renew", l.election, err)
	}
}

// Release deletes the candidate znode, so that the next candidate, watching
// it, is elected at once.
func (l *lease) Release(ctx context.Context) error {
	switch gone, released := l.state(); {
	case released:
		return nil
	case gone:
		return fmt.Errorf("zookeeper: release %q: %w", l.election, backend.ErrLost)
	}
	_, err := do(l.b, ctx, func() (struct{}, error) {
		return struct{}{}, l.s.conn.Delete(l.path, -1)
	}, nil)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return wrap("release", l.election, err)
	}
	l.end(true, false)
	return nil
}
