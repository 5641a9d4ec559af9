package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// lease is one candidate: a key under its election's directory, attached to
// a session. It implements [backend.Lease] once its Campaign has won.
type lease struct {
	b        *Backend
	s        *session
	election string
	key      string
	rev      int64 // create revision of key: the token
	// put is set once the put of key was sent: until rev is known, the
	// put may still be applied after the Campaign gave up.
	put bool

	lost     chan struct{}
	lostOnce sync.Once
	stop     func() // takes the key off the Backend's own-key watch (own.go)

	mu       sync.Mutex
	released bool
	acked    time.Time // send time of the acknowledgement the last renewal used
}

var _ backend.Lease = (*lease)(nil)

// Token returns the create revision of the candidate key.
func (l *lease) Token() uint64 { return uint64(l.rev) }

// Deadline returns the session's local deadline: the send time of its
// newest acknowledged keepalive plus the granted TTL less the drift bound.
func (l *lease) Deadline() time.Time { return l.s.Deadline() }

// Lost returns a channel closed when the key is deleted, the etcd lease is
// found gone, the lease is released, or the Backend is closed.
func (l *lease) Lost() <-chan struct{} { return l.lost }

// Renew makes sure the etcd lease was kept alive by a keepalive sent within
// the last fifth of its TTL and after the one this lease's previous renewal
// (or its Campaign) used, sending one if none was: the candidates sharing
// an etcd lease share keepalives, but no renewal succeeds on an old
// acknowledgement.
func (l *lease) Renew(ctx context.Context) error {
	if err := l.gone("renew"); err != nil {
		return err
	}
	l.mu.Lock()
	after := l.acked
	l.mu.Unlock()
	maxAge := l.s.ttl / reuseFraction
	// Most renewals of a shared lease find a recent acknowledgement (or a
	// lost or distrusted lease): answer without setting up a bounded
	// request.
	sent, ok, err := l.s.recent(maxAge, after)
	if !ok && err == nil {
		sent, err = bounded(l.b, ctx, func(ctx context.Context) (time.Time, error) {
			return l.s.keepAlive(ctx, l.key, maxAge, after)
		})
	}
	if err == nil {
		l.mu.Lock()
		if sent.After(l.acked) {
			l.acked = sent
		}
		l.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if l.b.isClosed() {
			return fmt.Errorf("etcd: renew %q: %w", l.election, backend.ErrClosed)
		}
		return fmt.Errorf("etcd: renew %q: %w", l.election, err)
	}
	return l.gone("renew")
}

// gone returns an error wrapping ErrLost if the lease is finished.
func (l *lease) gone(op string) error {
	select {
	case <-l.lost:
		return fmt.Errorf("etcd: %s %q: %w", op, l.election, backend.ErrLost)
	default:
		return nil
	}
}

// Release deletes the candidate key if it is still this lease's (compared
// by create revision), so a successor's key is never touched. A failed
// request gives the lease up all the same (see [backend.Lease]): the key is
// left to the session's later keepalives, which delete it, and the session
// takes no new candidates, so that it lapses once the candidates it has are
// gone. Without that, the keepalives that other candidates on the session
// share kept the key alive, and the election held by nobody, for as long as
// the process ran.
func (l *lease) Release(ctx context.Context) error {
	l.mu.Lock()
	released := l.released
	l.mu.Unlock()
	if released {
		return nil
	}
	if err := l.b.usable("release", l.election); err != nil {
		l.finish() // Close revoked its session, or the client is gone and the key lapses
		return err
	}
	if err := l.gone("release"); err != nil {
		l.finish()
		return err
	}
	if err := l.b.clientClosed(); err != nil {
		l.finish() // no keepalive can reach the key: it lapses
		return fmt.Errorf("etcd: release %q: %w", l.election, err)
	}
	cmp := clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.rev)
	resp, err := l.b.cli.Txn(ctx).If(cmp).Then(clientv3.OpDelete(l.key)).Commit()
	if err != nil {
		l.s.orphan(l.key, l.rev)
		l.finish()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("etcd: release %q: %w", l.election, err)
	}
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	l.finish()
	if !resp.Succeeded {
		return fmt.Errorf("etcd: release %q: key was already gone: %w", l.election, backend.ErrLost)
	}
	return nil
}

// markLost closes Lost.
func (l *lease) markLost() {
	l.lostOnce.Do(func() { close(l.lost) })
}

// finish ends the lease locally: Lost closes, the own-key watch stops, and
// the session slot is freed.
func (l *lease) finish() {
	l.markLost()
	if l.stop != nil {
		l.stop()
	}
	l.b.unregister(l)
}
