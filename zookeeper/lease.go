package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	dir, name  string // the election's znode, and the candidate's name in it
	path       string
	token      uint64
	session    int64 // the session id that owns the znode
	lost       chan struct{}
	watchState // of the election's watch, for Renew (see dispatch.go)

	// Guarded by s.mu.
	epoch  uint64 // the session's disconnection epoch the znode was last known in
	queued bool   // queued for the dispatcher's check

	mu       sync.Mutex
	gone     bool       // lost, released or closed; lost is closed
	released bool       // gone through Release
	deadline time.Time  // latest Deadline reported
	kept     *sync.Once // ended with its znode perhaps alive: hands it to the janitor once
}

var (
	_ backend.Lease         = (*lease)(nil)
	_ backend.TrailingLease = (*lease)(nil)
	_ backend.SinceRenewer  = (*lease)(nil)
)

// newLease registers the lease of a candidate that found its znode path
// first in a listing of its election that set a children watch (its
// Campaign's intent in), in disconnection epoch epoch (see dispatch.go).
func (b *Backend) newLease(s *session, c backend.Candidate, path string, token uint64, id int64, in *intent, epoch uint64) (*lease, error) {
	i := strings.LastIndexByte(path, '/')
	l := &lease{b: b, s: s, election: c.Election, dir: path[:i], name: path[i+1:], path: path, token: token, session: id, lost: make(chan struct{})}
	st, _ := s.state()
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
	s.watchFor(l, in, epoch)
	return l, nil
}

// follow applies the session's state st to the lease, on the session's
// dispatcher: expiry and close end it, a disconnection ends it under the
// default policy or past the grace, and a reconnection within the grace
// has it checked again before its watch is trusted.
func (l *lease) follow(st state) {
	switch {
	case st.closed || st.id != l.session:
		// Closed or expired: the znode went with the session.
		l.end(false, false)
	case !st.up && (l.s.grace == 0 || st.lapsed):
		// The session may still be alive: have the znode deleted once
		// its holder has stopped (see end), so that a candidate told it
		// lost keeps nobody waiting longer than that.
		l.end(false, true)
	case st.up:
		l.s.mu.Lock()
		if l.epoch != st.epoch {
			l.epoch = st.epoch
			l.armedAt(0, false)
			l.s.queueLocked(l)
		}
		l.s.mu.Unlock()
	}
}

// end ends the lease once: it closes Lost and unregisters the lease. With
// keep set its znode may still exist (the session may be alive): it is
// deleted, as soon as the session is reachable, once the holder has
// released the lease or the last Deadline it reported has passed, not
// before (a successor must not lead while the holder still acts). A later call returns only
// once the lease is unregistered, and records a release.
func (l *lease) end(released, keep bool) {
	l.mu.Lock()
	if l.gone {
		// Ended already, e.g. by the session's dispatcher while Release
		// deleted the znode: the lease may still be registered for a
		// moment in Guard's table, and the caller must not return
		// before it is not.
		l.released = l.released || released
		l.mu.Unlock()
		l.b.forget(l)
		return
	}
	l.gone, l.released = true, released
	close(l.lost)
	if keep {
		// The holder learns of the loss through Lost, and stops acting
		// at its own pace, no later than the Deadline it was last told
		// (less its margin). Deleting the znode before then would let a
		// successor lead while the holder still acts: the janitor gets
		// it at that Deadline, or at once when the holder releases it.
		l.kept = new(sync.Once)
		time.AfterFunc(time.Until(l.deadline), l.handOver)
	}
	l.mu.Unlock()
	l.b.forget(l)
	l.s.unwatch(l)
}

// handOver has the janitor delete, once, the znode of a lease that ended
// with it perhaps alive (see end): when its holder releases it, or at its
// last Deadline.
func (l *lease) handOver() {
	l.mu.Lock()
	once := l.kept
	l.mu.Unlock()
	if once != nil {
		once.Do(func() { l.s.janitor.abandon(l.path, l.session, false) })
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

// DeadlineTrails reports that the lease's Deadline trails the proof of its
// last renewal (an answer counts only once a later one confirms it, see
// report.go), so that the Elector renews it once per interval, on a grid
// shared by the Electors of the process, rather than whenever the Deadline
// looks due.
func (l *lease) DeadlineTrails() bool { return true }

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
// election's watch is armed and has not fired, the znode's deletion would
// have been reported before that answer, so the request need not read the
// znode and is shared by the session's concurrent renewals (see share.go):
// leases renewed together cost one request, not one each. Otherwise Renew
// reads its znode. The Deadline is [backend.LeaseDeadline] of the send time
// of the newest answered request of the session that the ensemble leader
// is known to have counted, and the negotiated timeout: it trails the
// proof (see report.go), so the lease says so to the Elector
// (DeadlineTrails).
func (l *lease) Renew(ctx context.Context) error { return l.RenewSince(ctx, time.Now()) }

// RenewSince renews as Renew does, taking as proof of the session a
// request sent at or after since rather than after the call began: the
// Elector starts the renewals of the leases it renews together at one
// instant, and runs them on a few goroutines one after another, which then
// share one request. The znode is proved as by Renew: by the election's
// watch, checked once the proof has been answered.
func (l *lease) RenewSince(ctx context.Context, since time.Time) error {
	if gone, _ := l.state(); gone {
		return fmt.Errorf("zookeeper: renew %q: %w", l.election, backend.ErrLost)
	}
	if !l.watching() {
		return l.read(ctx)
	}
	if _, err := l.s.fresh(ctx, since, l.read); err != nil {
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
// it, is elected at once. A failed delete gives the lease up all the same
// (see [backend.Lease]): the session's janitor deletes the znode once the
// session answers. Left alone, it lived as long as the session, which the
// process's other leases keep alive, with nobody acting on it.
func (l *lease) Release(ctx context.Context) error {
	switch gone, released := l.state(); {
	case released:
		return nil
	case gone:
		l.handOver() // the holder has stopped: its znode may go now
		if l.b.isClosed() {
			return fmt.Errorf("zookeeper: release %q: %w", l.election, backend.ErrClosed)
		}
		return fmt.Errorf("zookeeper: release %q: %w", l.election, backend.ErrLost)
	}
	// The delete's own event is of no interest: stop counting events
	// before it is sent, or the dispatcher would list the election again.
	l.armedAt(0, false)
	l.s.unwatch(l)
	_, err := do(l.b, ctx, func() (struct{}, error) {
		return struct{}{}, l.s.conn.Delete(l.path, -1)
	}, nil)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		l.s.janitor.abandon(l.path, l.session, false)
		l.end(false, false)
		return wrap("release", l.election, err)
	}
	l.end(true, false)
	return nil
}
