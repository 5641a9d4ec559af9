package kube

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leaderkit/elector/backend"
)

// errGone means the Lease no longer names the lease that wrote it: another
// holder took it, it was released, or it was deleted.
var errGone = fmt.Errorf("the Lease is no longer ours: %w", backend.ErrLost)

// lease is one won election: the Lease object as this lease last wrote it.
type lease struct {
	b        *Backend
	election string
	name     string
	o        owner
	secs     int32
	won      string // resourceVersion of the write that took the Lease

	// mu serializes the lease's writes and guards the fields below; it is
	// held for the length of a request.
	mu   sync.Mutex
	obj  *coordinationv1.Lease // as last written or read back as ours
	gone bool                  // the Lease is known not to be ours any more
	// deadline is written with both mu and dmu held, and read with
	// either: Deadline takes only dmu, so it never waits for a request.
	dmu      sync.Mutex
	deadline time.Time
	// seen is the record of the last write as client-go compares records
	// (times in whole seconds), and seenSent the send time of the first
	// write of that record: a client-go candidate may have seen it first
	// then, and counts the holder's duration from there.
	seen     specKey
	seenSent time.Time
	// unknownSent is the send time of the first renewal since the last
	// successful one whose outcome is unknown (it may have been applied):
	// client-go may have seen the record it wrote first.
	unknownSent time.Time

	// every is the interval between its renewals (nanoseconds; 0 before
	// the second), lastRenew when the last one started (under mu): the
	// Backend sizes its campaigns to the renewals it sends (see admit).
	every     atomic.Int64
	lastRenew time.Time

	ended    atomic.Bool // Lost is closed: released, lost, or the Backend closed
	lost     chan struct{}
	lostOnce sync.Once

	yield     chan struct{} // closed once the Lease names another preferredHolder
	yieldOnce sync.Once
}

var _ backend.Yielder = (*lease)(nil)

// Yield implements [backend.Yielder]: the channel closes once the Lease,
// still held by this lease, names another identity in spec.preferredHolder
// (Kubernetes' Coordinated Leader Election asks the holder to hand over,
// KEP-4355). The lease stays renewable until it is released.
func (l *lease) Yield() <-chan struct{} { return l.yield }

// checkPreferred closes Yield if obj, a version of the Lease held by l,
// names another preferred holder.
func (l *lease) checkPreferred(obj *coordinationv1.Lease) {
	if p := obj.Spec.PreferredHolder; p != nil && *p != "" && *p != l.o.identity && l.o.owns(obj) {
		l.yieldOnce.Do(func() { close(l.yield) })
	}
}

func (l *lease) Token() uint64 { return uint64(l.o.token) }

func (l *lease) Deadline() time.Time {
	l.dmu.Lock()
	defer l.dmu.Unlock()
	return l.deadline
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

// finish closes Lost; the lease takes no more renewals.
func (l *lease) finish() {
	l.ended.Store(true)
	l.lostOnce.Do(func() { close(l.lost) })
}

// Renew updates the Lease's renewTime, conditional on the resourceVersion
// this lease last wrote. A conflict is read back: if the Lease still names
// this lease (an earlier renewal whose answer was lost moved it), the update
// is tried once more; otherwise it was taken over, released or deleted, and
// Renew returns an error wrapping [backend.ErrLost]. A lease whose Deadline
// has passed is not renewed: waiting candidates may count it expired.
func (l *lease) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended.Load() || l.gone {
		return fmt.Errorf("kube: renew %q: %w", l.election, backend.ErrLost)
	}
	began := time.Now()
	ctx = renewal(ctx) // before the other requests in the client's limit
	if late := time.Since(l.deadline); late >= 0 {
		// Not known to be taken: a Release still clears it if it is ours.
		l.finish()
		l.b.forget(l)
		return fmt.Errorf("kube: renew %q: the lease passed its Deadline %v ago: waiting candidates may count it expired: %w",
			l.election, late.Round(time.Millisecond), backend.ErrLost)
	}
	got, sent, err := l.b.renewOwned(ctx, l.name, l.o, l.secs, l.obj)
	if err != nil && !sent.IsZero() && l.unknownSent.IsZero() && !errors.Is(err, backend.ErrLost) && !refused(err) {
		l.unknownSent = sent
	}
	switch {
	case err == nil:
		l.obj = got
		l.checkPreferred(got)
		l.renewed(began) // retries of failed ones are not the lease's rate
		switch k := secondsKeyOf(got); {
		case l.b.cfg.electorOnly:
			l.seen, l.seenSent = k, sent
		case k != l.seen:
			// A renewal whose answer was lost may have written this
			// record first.
			l.seen, l.seenSent = k, sent
			if !l.unknownSent.IsZero() && l.unknownSent.Before(sent) {
				l.seenSent = l.unknownSent
			}
		}
		l.unknownSent = time.Time{}
		if d := backend.LeaseDeadline(l.seenSent, time.Duration(l.secs)*time.Second, l.b.cfg.drift); d.After(l.deadline) {
			l.dmu.Lock()
			l.deadline = d
			l.dmu.Unlock()
		}
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, backend.ErrLost):
		l.lose()
		return fmt.Errorf("kube: renew %q: %w", l.election, err)
	}
	return fmt.Errorf("kube: renew %q: %w", l.election, permanent(err))
}

// lose records that the Lease is not ours any more; l.mu is held.
func (l *lease) lose() {
	l.gone = true
	l.finish()
	l.b.forget(l)
}

// Release writes a released record (no holder, as client-go's
// ReleaseOnCancel does), conditional on the Lease still naming this lease,
// so that waiting candidates are elected at once. A failed Release is
// retried once in the background, bounded by [Options.CleanupTimeout].
func (l *lease) Release(ctx context.Context) error {
	l.mu.Lock()
	l.finish()
	l.b.forget(l)
	if l.gone {
		l.mu.Unlock()
		return l.b.usable("release", l.election)
	}
	err := l.clearLocked(renewal(ctx))
	l.mu.Unlock()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backend.ErrLost):
		return fmt.Errorf("kube: release %q: %w", l.election, err)
	}
	l.b.background(l.clear)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("kube: release %q: %w", l.election, err)
}

// clearLocked releases the Lease if it is still ours; l.mu is held.
func (l *lease) clearLocked(ctx context.Context) error {
	got, err := l.b.clearOwned(ctx, l.name, l.o, l.obj)
	switch {
	case err == nil:
		l.obj, l.gone = got, true
	case errors.Is(err, backend.ErrLost):
		l.gone = true
	}
	return err
}

// clear releases the Lease if it is still ours, bounded by
// Options.CleanupTimeout: after a failed Release, and in Close.
func (l *lease) clear() {
	ctx, cancel := context.WithTimeout(renewal(context.Background()), l.b.cfg.cleanup)
	defer cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		_ = l.clearLocked(ctx)
	}
}

// background runs f in a goroutine that Close waits for; once the Backend
// is closed it runs f at once instead.
func (b *Backend) background(f func()) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		f()
		return
	}
	b.bg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.bg.Done()
		f()
	}()
}

// maxConflicts is how many conflicting writes renewOwned and clearOwned
// read back and try again before giving up with a transient error.
const maxConflicts = 3

// renewOwned writes o's record with a new renewTime onto the Lease, starting
// from cur (the Lease as o last wrote it; nil to read it first). It returns
// the Lease as written and the time the successful update was sent, or an
// error wrapping errGone once the Lease does not name o; after an update
// whose outcome is unknown, the error and the time that update was sent.
func (b *Backend) renewOwned(ctx context.Context, name string, o owner, secs int32, cur *coordinationv1.Lease) (*coordinationv1.Lease, time.Time, error) {
	for range maxConflicts {
		if cur == nil {
			var err error
			if cur, err = b.get(ctx, name); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, time.Time{}, fmt.Errorf("lease %s/%s was deleted: %w", b.ns, name, errGone)
				}
				return nil, time.Time{}, err
			}
		}
		if !o.owns(cur) {
			return nil, time.Time{}, fmt.Errorf("lease %s/%s is held by %q (leaseTransitions %d): %w",
				b.ns, name, holderOf(cur), transitionsOf(cur), errGone)
		}
		next := cur.DeepCopy()
		holderRecord(o, secs, false).writeTo(next)
		sent := time.Now()
		got, err := b.update(ctx, next)
		switch {
		case err == nil:
			return got, sent, nil
		case apierrors.IsConflict(err):
			cur = nil // read it back: still ours, or taken?
		case apierrors.IsNotFound(err):
			return nil, time.Time{}, fmt.Errorf("lease %s/%s was deleted: %w", b.ns, name, errGone)
		default:
			return nil, sent, err // the update may have been applied
		}
	}
	return nil, time.Time{}, fmt.Errorf("lease %s/%s: %d conflicting updates in a row", b.ns, name, maxConflicts)
}

// clearOwned writes the released record onto the Lease if it names o,
// starting from cur (nil to read it first). It returns the Lease as written,
// or an error wrapping errGone when it does not name o.
func (b *Backend) clearOwned(ctx context.Context, name string, o owner, cur *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	for range maxConflicts {
		if cur == nil {
			var err error
			if cur, err = b.get(ctx, name); err != nil {
				if apierrors.IsNotFound(err) {
					return nil, fmt.Errorf("lease %s/%s was deleted: %w", b.ns, name, errGone)
				}
				return nil, err
			}
		}
		if !o.owns(cur) {
			return nil, fmt.Errorf("lease %s/%s is held by %q (leaseTransitions %d): %w",
				b.ns, name, holderOf(cur), transitionsOf(cur), errGone)
		}
		next := cur.DeepCopy()
		releasedRecord().writeTo(next)
		got, err := b.update(ctx, next)
		switch {
		case err == nil:
			return got, nil
		case apierrors.IsConflict(err):
			cur = nil
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("lease %s/%s was deleted: %w", b.ns, name, errGone)
		default:
			return nil, err
		}
	}
	return nil, fmt.Errorf("lease %s/%s: %d conflicting updates in a row", b.ns, name, maxConflicts)
}
