package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// lease is a candidate znode that is first in its election.
type lease struct {
	b        *Backend
	election string
	path     string
	token    uint64
	session  int64
	lost     chan struct{}

	// Guarded by b.mu.
	gone     bool      // lost, released or closed; lost is closed
	released bool      // gone through Release
	verify   bool      // reconnected: check the znode before trusting it
	deadline time.Time // latest Deadline reported
}

var _ backend.Lease = (*lease)(nil)

// newLease registers the lease of a candidate that found itself first, and
// starts the goroutine that watches its znode (armed by watch).
func (b *Backend) newLease(c backend.Candidate, path string, token uint64, id int64, watch <-chan zk.Event) (*lease, error) {
	l := &lease{b: b, election: c.Election, path: path, token: token, session: id, lost: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return nil, errClosed
	case b.sess.id != id:
		return nil, errSessionEnded
	case !b.sess.up && b.cfg.grace == 0:
		// Disconnected after the check: under the default policy that ends
		// the lease before it starts.
		return nil, zk.ErrConnectionClosed
	}
	l.deadline = b.deadlineLocked()
	b.leases[l] = struct{}{}
	b.wg.Add(1)
	go l.watch(watch)
	return l, nil
}

// deadlineLocked is the latest instant the current session can still be alive
// at the servers: the send time of the last request they answered, plus the
// negotiated timeout, minus [driftAllowance].
func (b *Backend) deadlineLocked() time.Time {
	t := b.sess.timeout
	return b.sess.heard.Add(t - driftAllowance(t))
}

// watch ends the lease when its znode is deleted behind its back (by another
// client, or with the session), re-arming the watch after data changes.
func (l *lease) watch(ch <-chan zk.Event) {
	defer l.b.wg.Done()
	for {
		var ev zk.Event
		select {
		case <-l.lost:
			return
		case ev = <-ch:
		}
		if ev.Type != zk.EventNotWatching && ev.Type != zk.EventNodeDeleted {
			var err error
			_, _, ch, err = l.b.conn.GetW(l.path)
			if err == nil {
				continue
			}
			if !errors.Is(err, zk.ErrNoNode) {
				return // cannot tell; Renew and reconnection checks still can
			}
		}
		l.b.mu.Lock()
		l.b.loseLocked(l, false)
		l.b.mu.Unlock()
		return
	}
}

// Token returns the czxid of the candidate znode: the zxid of the
// transaction that created it, unique and increasing across the ensemble.
func (l *lease) Token() uint64 { return l.token }

// Deadline returns the session's last-heard-from-server instant plus its
// negotiated timeout minus [driftAllowance]. Pings move it forward while the
// lease is held; it stops moving once the lease is gone.
func (l *lease) Deadline() time.Time {
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if !l.gone && b.sess.id == l.session {
		if d := b.deadlineLocked(); d.After(l.deadline) {
			l.deadline = d
		}
	}
	return l.deadline
}

// Lost returns a channel closed when the lease ends.
func (l *lease) Lost() <-chan struct{} { return l.lost }

// Renew makes one round trip that reads the candidate znode, proving that the
// session is alive and the znode still its own; the Deadline moves to the
// send time of that read plus the session timeout.
func (l *lease) Renew(ctx context.Context) error {
	b := l.b
	b.mu.Lock()
	gone := l.gone
	b.mu.Unlock()
	if gone {
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	}
	st, err := do(b, ctx, func() (*zk.Stat, error) {
		ok, st, err := b.conn.Exists(l.path)
		if err == nil && !ok {
			err = zk.ErrNoNode
		}
		return st, err
	}, nil)
	switch {
	case err == nil && st.EphemeralOwner == l.session:
		return nil
	case err == nil, errors.Is(err, zk.ErrNoNode):
		b.mu.Lock()
		b.loseLocked(l, false)
		b.mu.Unlock()
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	default:
		return wrap("renew", l.election, err)
	}
}

// Release deletes the candidate znode, so that the next candidate, watching
// it, is elected at once.
func (l *lease) Release(ctx context.Context) error {
	b := l.b
	b.mu.Lock()
	gone, released := l.gone, l.released
	b.mu.Unlock()
	switch {
	case released:
		return nil
	case gone:
		return fmt.Errorf("zookeeper: release %q: %w", l.election, backend.ErrLost)
	}
	_, err := do(b, ctx, func() (struct{}, error) {
		return struct{}{}, b.conn.Delete(l.path, -1)
	}, nil)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return wrap("release", l.election, err)
	}
	b.mu.Lock()
	if !l.gone {
		l.released = true
	}
	b.loseLocked(l, false)
	b.mu.Unlock()
	return nil
}
