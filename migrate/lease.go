package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// lease implements [backend.Lease] over the lease held on the old backend,
// the one on the new backend, or both.
type lease struct {
	b        *Backend
	token    uint64
	old, new backend.Lease // nil for a side the term does not hold
	lost     chan struct{}
	lostOnce sync.Once

	yield     chan struct{} // made by the first Yield
	yieldOnce sync.Once

	mu               sync.Mutex // serialises Renew and Release
	oldGone, newGone bool       // released or known lost
	released         bool
}

func (l *lease) Token() uint64 { return l.token }

// Deadline is the earlier of the two sides' deadlines: past it, one of the
// stores may have given its side to another candidate.
func (l *lease) Deadline() time.Time {
	switch {
	case l.old == nil:
		return l.new.Deadline()
	case l.new == nil:
		return l.old.Deadline()
	}
	do, dn := l.old.Deadline(), l.new.Deadline()
	if do.Before(dn) {
		return do
	}
	return dn
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) closeLost() { l.lostOnce.Do(func() { close(l.lost) }) }

// watch closes l.lost when either side is lost, the migrate Backend is
// closed, or l is released.
func (l *lease) watch() {
	var oldLost, newLost <-chan struct{}
	if l.old != nil {
		oldLost = l.old.Lost()
	}
	if l.new != nil {
		newLost = l.new.Lost()
	}
	go func() {
		select {
		case <-oldLost:
		case <-newLost:
		case <-l.b.done:
		case <-l.lost:
		}
		l.closeLost()
	}()
}

// Yield implements [backend.Yielder]: the channel closes once the store of
// either side asks its holder to yield (never, when neither side is a
// [backend.Yielder]).
func (l *lease) Yield() <-chan struct{} {
	l.yieldOnce.Do(l.followYield)
	return l.yield
}

// followYield makes l.yield and closes it when a side's Yield closes, until
// l is lost or released.
func (l *lease) followYield() {
	l.yield = make(chan struct{})
	var asked [2]<-chan struct{}
	n := 0
	for _, s := range l.sides() {
		if y, ok := s.(backend.Yielder); ok {
			asked[n] = y.Yield()
			n++
		}
	}
	if n == 0 {
		return
	}
	go func() {
		select {
		case <-asked[0]:
		case <-asked[1]:
		case <-l.lost:
			return
		}
		close(l.yield)
	}()
}

// sides returns the leases l holds, old first.
func (l *lease) sides() []backend.Lease {
	var s []backend.Lease
	if l.old != nil {
		s = append(s, l.old)
	}
	if l.new != nil {
		s = append(s, l.new)
	}
	return s
}

// Renew renews both sides, one after the other. If either is lost, the
// term is over: Lost closes and Renew returns an error wrapping
// [backend.ErrLost].
func (l *lease) Renew(ctx context.Context) error {
	return l.renew(ctx, func(s backend.Lease) error { return s.Renew(ctx) })
}

// RenewSince implements [backend.SinceRenewer]: it renews as Renew does,
// passing since to each side that is a SinceRenewer (a ZooKeeper lease),
// so that a migrating election shares its side's session request with the
// other renewals started at the same instant.
func (l *lease) RenewSince(ctx context.Context, since time.Time) error {
	return l.renew(ctx, func(s backend.Lease) error {
		if r, ok := s.(backend.SinceRenewer); ok {
			return r.RenewSince(ctx, since)
		}
		return s.Renew(ctx)
	})
}

// renew renews both sides with renewSide, one after the other (see Renew).
func (l *lease) renew(ctx context.Context, renewSide func(backend.Lease) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.b.done:
		l.closeLost()
		return fmt.Errorf("migrate: renew token %d: %w", l.token, backend.ErrClosed)
	default:
	}
	if l.released || l.oldGone || l.newGone {
		l.closeLost()
		return fmt.Errorf("migrate: renew token %d: %w", l.token, backend.ErrLost)
	}
	for i, s := range l.sides() {
		if err := renewSide(s); err != nil {
			if errors.Is(err, backend.ErrLost) {
				l.markGone(s)
				l.closeLost()
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("migrate: renew token %d on the %s backend: %w", l.token, sideName(l, i), err)
		}
	}
	return nil
}

func sideName(l *lease, i int) string {
	if i == 0 && l.old != nil {
		return "old"
	}
	return "new"
}

func (l *lease) markGone(s backend.Lease) {
	if s == l.old {
		l.oldGone = true
	} else {
		l.newGone = true
	}
}

// Release releases both sides at once. A side that is already gone counts
// as released. When one side fails, Release returns its error and may be
// called again, which releases only what is left.
func (l *lease) Release(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var todo []backend.Lease
	if l.old != nil && !l.oldGone {
		todo = append(todo, l.old)
	}
	if l.new != nil && !l.newGone {
		todo = append(todo, l.new)
	}
	// The first side on this goroutine, the other (if any) on its own.
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, s := range todo[min(1, len(todo)):] {
		wg.Go(func() { errs[i+1] = s.Release(ctx) })
	}
	if len(todo) > 0 {
		errs[0] = todo[0].Release(ctx)
	}
	wg.Wait()
	var failed []error
	for i, s := range todo {
		if errs[i] == nil || errors.Is(errs[i], backend.ErrLost) {
			l.markGone(s)
			continue
		}
		failed = append(failed, errs[i])
	}
	if len(failed) > 0 {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("migrate: release token %d: %w", l.token, errors.Join(failed...))
	}
	l.released = true
	l.closeLost()
	return nil
}

// DeadlineTrails implements [backend.TrailingLease]: the lease's Deadline
// trails its proof when the Deadline of a side it holds does (a ZooKeeper
// lease), as it is the earlier of the two sides'.
func (l *lease) DeadlineTrails() bool {
	for _, s := range l.sides() {
		if t, ok := s.(backend.TrailingLease); ok && t.DeadlineTrails() {
			return true
		}
	}
	return false
}
