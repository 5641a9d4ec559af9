package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
)

// lease implements [backend.Lease]. Its mutable fields are guarded by the
// store's mutex.
type lease struct {
	b     *Backend
	e     *election
	c     backend.Candidate
	token uint64
	lost  chan struct{}

	deadline time.Time
	timer    *time.Timer
	released bool
	// gaveUp: a Release failed. The holder has stopped, so the lease is
	// lost to it at once and never renewed again; the election stays held
	// until the lease expires, as at a store that did not answer.
	gaveUp bool
}

func (l *lease) Token() uint64 { return l.token }

func (l *lease) Deadline() time.Time {
	l.b.s.mu.Lock()
	defer l.b.s.mu.Unlock()
	return l.deadline
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.b.check(); err != nil {
		return err
	}
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.e.holder != l || l.gaveUp {
		return fmt.Errorf("memory: renew %q token %d: %w", l.e.name, l.token, backend.ErrLost)
	}
	l.deadline = time.Now().Add(l.c.TTL)
	l.timer.Reset(l.c.TTL)
	return nil
}

func (l *lease) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		l.giveUp()
		return err
	}
	if err := l.b.check(); err != nil {
		l.giveUp()
		return err
	}
	return l.release()
}

// giveUp ends the lease for its holder after a failed Release; the
// election stays held until the lease expires.
func (l *lease) giveUp() {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	l.gaveUp = true
	l.end()
}

// end closes lost once; the store's mutex must be held.
func (l *lease) end() {
	select {
	case <-l.lost:
	default:
		close(l.lost)
	}
}

func (l *lease) release() error {
	s := l.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drop(l) || l.released {
		l.released = true
		return nil
	}
	return fmt.Errorf("memory: release %q token %d: %w", l.e.name, l.token, backend.ErrLost)
}

func (l *lease) holder() backend.Holder {
	return backend.Holder{
		Election: l.e.name,
		Identity: l.c.Identity,
		Token:    l.token,
		TTL:      max(time.Until(l.deadline), 0),
	}
}
