package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// errOldLost is the cause of a new campaign abandoned because the old lease
// it held was lost meanwhile.
var errOldLost = errors.New("migrate: the old lease was lost while waiting for the new backend")

// campaignBoth is the campaign of PhaseBoth and, with mark, of PhaseNew.
// It campaigns on both backends at once (see racePair), and a term starts
// only once it holds both.
func (b *Backend) campaignBoth(ctx context.Context, c backend.Candidate, mark bool) (*lease, error) {
	if b.seenMarked(c.Election) {
		return b.campaignNewOnly(ctx, c)
	}
	lo, ln, err := b.racePair(ctx, c)
	if errors.Is(err, errMarked) {
		b.setMarked(c.Election)
		if ln != nil {
			return b.newLease(ctx, b.newEpoch(), ln.Token(), nil, ln)
		}
		return b.campaignNewOnly(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	if !mark {
		return b.newLease(ctx, b.oldEpoch(), lo.Token(), lo, ln)
	}
	// PhaseNew's first term: the old store's last token is lo's, so every
	// token of the new epoch is above every token the old store issued.
	if _, err := Token(b.oldEpoch(), lo.Token()); err != nil {
		l := &lease{b: b, old: lo, new: ln, lost: make(chan struct{})}
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	if err := b.set.marker.Mark(ctx, c.Election, lo, b.MarkerIdentity()); err != nil {
		l := &lease{b: b, old: lo, new: ln, lost: make(chan struct{})}
		_ = l.Release(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("migrate: campaign %q: write the marker on the old store: %w", c.Election, err)
	}
	b.setMarked(c.Election)
	return b.newLease(ctx, b.newEpoch(), ln.Token(), nil, ln)
}

// pending is a campaign running in its own goroutine; its result arrives
// on ch exactly once.
type pending struct {
	ch     chan won
	ctx    context.Context
	cancel context.CancelCauseFunc
}

type won struct {
	l   backend.Lease
	err error
}

func start(ctx context.Context, campaign func(context.Context) (backend.Lease, error)) *pending {
	cctx, cancel := context.WithCancelCause(ctx)
	p := &pending{ch: make(chan won, 1), ctx: cctx, cancel: cancel}
	go func() {
		l, err := campaign(cctx)
		p.ch <- won{l, err}
	}()
	return p
}

// abandon ends p's campaign and releases what it won. It returns once the
// campaign has returned, so no goroutine or lease outlives the caller.
func (p *pending) abandon(ctx context.Context, ttl time.Duration) {
	if p == nil {
		return
	}
	p.cancel(nil)
	if w := <-p.ch; w.err == nil {
		releaseBounded(ctx, w.l, ttl)
	}
}

// errNewFailed is the cause with which a failed new campaign ends the old
// one racing it.
var errNewFailed = errors.New("migrate: the campaign on the new backend failed")

// errYielded is the result of a new campaign withdrawn, or a new side
// given back, because the old campaign had not won within pairWindow (see
// racePair).
var errYielded = errors.New("migrate: the new side was given back while the old one was held elsewhere")

// pairWindow is how long a campaign takes part on the new side before it
// holds the old lease. An uncontended old campaign wins well within it; one
// that takes longer waits behind another holder. It is long enough that
// the new campaign's first requests have been answered by then on a loaded
// host: a campaign withdrawn while its candidate key or znode is being
// written may leave it behind until the session lapses, which holds up the
// next holder of the old lease for up to a TTL.
const pairWindow = 100 * time.Millisecond

// racePair campaigns on the old and the new backend at once and returns
// both leases, so that an uncontended campaign costs about the slower
// store's rather than the sum of the two. The old campaign runs on the
// caller's goroutine and the new one on a goroutine of its own: an
// uncontended campaign starts one goroutine, as two requests issued at once
// by hand would.
//
// Only a candidate that holds the old lease stays a candidate on the new
// side. One whose old campaign has not won within pairWindow withdraws from
// the new side (it ends its new campaign, or gives back the new lease it
// won) and campaigns there again once it holds the old lease. Otherwise two
// waiters could each win one side when the holder lets go (a Redis lock goes
// to whichever waiter is quickest, an etcd or ZooKeeper election to the
// oldest candidate), and the one holding the new side would keep the other
// from leading. A candidate holding the old side waits for the new side as
// long as it holds the old one; every other candidate holds the new side at
// most pairWindow. So a hand-over costs the old store's hand-over plus an
// uncontended campaign on the new store.
//
// It returns errMarked (with the new lease, if it holds one) when the old
// store carries the marker.
func (b *Backend) racePair(ctx context.Context, c backend.Candidate) (lo, ln backend.Lease, err error) {
	octx, cancelOld := context.WithCancelCause(ctx)
	defer cancelOld(nil)
	oldWon := make(chan struct{})
	pn := start(ctx, func(nctx context.Context) (backend.Lease, error) {
		return b.campaignNewBeside(nctx, c, oldWon, cancelOld)
	})
	lo, err = b.campaignOld(octx, c)
	if err == nil {
		close(oldWon)
	}
	return b.afterOld(ctx, c, won{lo, err}, context.Cause(octx), pn)
}

// campaignNewBeside is the new side of racePair. A failed campaign ends
// the old one (through cancelOld) and returns its error. Unless oldWon is
// closed within pairWindow, it withdraws: it ends the new campaign, or
// gives back the lease it won, and returns errYielded. It returns the lease
// once oldWon is closed, or when ctx ends (the caller then releases it, see
// pending.abandon).
func (b *Backend) campaignNewBeside(ctx context.Context, c backend.Candidate, oldWon <-chan struct{}, cancelOld context.CancelCauseFunc) (backend.Lease, error) {
	wctx, withdraw := context.WithCancelCause(ctx)
	defer withdraw(nil)
	window := time.AfterFunc(pairWindow, func() {
		select {
		case <-oldWon:
		default:
			withdraw(errYielded)
		}
	})
	defer window.Stop()
	ln, err := b.new.Campaign(wctx, c)
	if err != nil {
		if ctx.Err() == nil && errors.Is(context.Cause(wctx), errYielded) {
			return nil, errYielded
		}
		cancelOld(errNewFailed)
		return nil, err
	}
	select {
	case <-oldWon:
		return ln, nil
	case <-ctx.Done():
		return ln, nil
	case <-wctx.Done():
	}
	select {
	case <-oldWon: // won just as the window closed
		return ln, nil
	default:
	}
	releaseBounded(ctx, ln, c.TTL)
	return nil, errYielded
}

// afterOld finishes racePair once the old campaign returned w, octx's cause
// being cause; pn is the new campaign, running or returned.
func (b *Backend) afterOld(ctx context.Context, c backend.Candidate, w won, cause error, pn *pending) (backend.Lease, backend.Lease, error) {
	if w.err != nil {
		if errors.Is(cause, errNewFailed) && ctx.Err() == nil {
			nw := <-pn.ch
			return nil, nil, fmt.Errorf("migrate: campaign %q on the new backend: %w", c.Election, nw.err)
		}
		if errors.Is(w.err, errMarked) {
			pn.cancel(nil)
			if nw := <-pn.ch; nw.err == nil {
				return nil, nw.l, errMarked
			}
			return nil, nil, errMarked
		}
		pn.abandon(ctx, c.TTL)
		return nil, nil, w.err
	}
	lo := w.l
	ln, err := b.awaitNewHolding(ctx, c, lo, pn)
	if errors.Is(err, errYielded) {
		pn = start(ctx, func(ctx context.Context) (backend.Lease, error) { return b.new.Campaign(ctx, c) })
		ln, err = b.awaitNewHolding(ctx, c, lo, pn)
	}
	if err != nil {
		releaseBounded(ctx, lo, c.TTL)
		return nil, nil, err
	}
	if now := time.Now(); !now.Before(ln.Deadline()) || !now.Before(lo.Deadline()) {
		releaseBounded(ctx, lo, c.TTL)
		releaseBounded(ctx, ln, c.TTL)
		return nil, nil, fmt.Errorf("migrate: campaign %q: %w", c.Election, errOldLost)
	}
	return lo, ln, nil
}

// markerWatchDelay is how long an old campaign runs before it starts
// watching for the marker. An uncontended campaign wins well within it and
// pays nothing for the watch; a marked election blocks the campaign, so the
// watch's first report ends it about this much later.
const markerWatchDelay = 20 * time.Millisecond

// campaignOld campaigns on the old backend. It returns errMarked when the
// old store carries the marker or when the marker appears while it waits.
// With a Watcher as old backend, the watch (started after
// markerWatchDelay, its first report the current holder) sees both; without
// one, the marker is read once before the campaign, and a marker written
// while it waits leaves it waiting behind the marker until ctx ends.
func (b *Backend) campaignOld(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	w, watcher := b.old.(backend.Watcher)
	if !watcher {
		if _, ok, err := marked(ctx, b.old, c.Election); err != nil {
			return nil, fmt.Errorf("migrate: campaign %q: read the old store: %w", c.Election, err)
		} else if ok {
			return nil, errMarked
		}
	}
	octx, cancel := context.WithCancelCause(ctx)
	// The watch starts only once the campaign has run markerWatchDelay, so
	// that an uncontended campaign starts no goroutine and waits for none.
	var (
		mu       sync.Mutex // orders the watch's wg.Add before wg.Wait
		done     bool       // under mu: the campaign returned; no watch starts
		wg       sync.WaitGroup
		watching *time.Timer
	)
	if watcher {
		watching = time.AfterFunc(markerWatchDelay, func() {
			mu.Lock()
			if done {
				mu.Unlock()
				return
			}
			wg.Add(1)
			mu.Unlock()
			defer wg.Done()
			b.watchMarker(octx, w, c, cancel)
		})
	}
	lo, err := b.old.Campaign(octx, c)
	cause := context.Cause(octx)
	cancel(nil)
	if watching != nil {
		watching.Stop()
		mu.Lock() // a watch past its check has added itself to wg by now
		done = true
		mu.Unlock()
	}
	wg.Wait()
	switch {
	case err == nil:
		return lo, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cause, errMarked):
		return nil, errMarked
	}
	return nil, fmt.Errorf("migrate: campaign %q on the old backend: %w", c.Election, err)
}

// watchMarker cancels the old campaign with errMarked once the old store
// reports the marker as the holder. A failed watch is started again after
// the renew interval; ctx ending stops it.
func (b *Backend) watchMarker(ctx context.Context, w backend.Watcher, c backend.Candidate, cancel context.CancelCauseFunc) {
	for {
		err := w.Watch(ctx, c.Election, func(h backend.Holder) {
			if IsMarker(h) {
				cancel(errMarked)
			}
		})
		if ctx.Err() != nil || backend.IsPermanent(err) {
			return
		}
		t := time.NewTimer(b.renewInterval(c.TTL))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// awaitNewHolding waits for pn, the campaign on the new backend, while
// keeping lo, the old backend's lease, renewed. It gives up when lo is lost
// or its deadline passes, so a term never starts on an old lease that
// lapsed meanwhile. pn has returned when awaitNewHolding returns.
func (b *Backend) awaitNewHolding(ctx context.Context, c backend.Candidate, lo backend.Lease, pn *pending) (backend.Lease, error) {
	// Most new campaigns return before lo needs a renewal or is lost:
	// wait for that first, and start keepOld only when it is needed, so
	// that the common case waits for no goroutine to exit.
	t := time.NewTimer(max(min(b.renewInterval(c.TTL), time.Until(lo.Deadline())), 0))
	var w won
	var wg sync.WaitGroup
	select {
	case w = <-pn.ch:
		t.Stop()
	case <-lo.Lost():
		t.Stop()
		pn.cancel(errOldLost)
		w = <-pn.ch
	case <-t.C:
		wg.Go(func() { b.keepOld(pn.ctx, c.TTL, lo, pn.cancel) })
		w = <-pn.ch
	}
	cause := context.Cause(pn.ctx)
	pn.cancel(nil)
	wg.Wait()
	ln, err := w.l, w.err
	if err == nil && (errors.Is(cause, errOldLost) || !time.Now().Before(lo.Deadline())) {
		releaseBounded(ctx, ln, c.TTL)
		err, cause = errOldLost, errOldLost
	}
	switch {
	case err == nil:
		return ln, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cause, errOldLost):
		return nil, fmt.Errorf("migrate: campaign %q: %w", c.Election, errOldLost)
	}
	return nil, fmt.Errorf("migrate: campaign %q on the new backend: %w", c.Election, err)
}

// keepOld renews lo every renew interval until ctx ends, and cancels ctx
// with errOldLost when lo is lost or no renewal succeeded before its
// deadline. It runs inside a Campaign, before any term exists, so it is
// not a term of internal/term's engine (docs/design/migrate.md says why).
func (b *Backend) keepOld(ctx context.Context, ttl time.Duration, lo backend.Lease, cancel context.CancelCauseFunc) {
	every := b.renewInterval(ttl)
	for {
		wait := min(every, time.Until(lo.Deadline()))
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-lo.Lost():
			t.Stop()
			cancel(errOldLost)
			return
		case <-t.C:
		}
		if !time.Now().Before(lo.Deadline()) {
			cancel(errOldLost)
			return
		}
		if err := lo.Renew(ctx); errors.Is(err, backend.ErrLost) || backend.IsPermanent(err) {
			cancel(errOldLost)
			return
		}
	}
}

// renewInterval is Options.RenewInterval, or a third of ttl.
func (b *Backend) renewInterval(ttl time.Duration) time.Duration {
	if b.set.renewInterval > 0 {
		return b.set.renewInterval
	}
	return max(ttl/3, time.Millisecond)
}

// releaseBounded releases l with a context that survives ctx's end, bounded
// by ttl: a campaign that gives up must not leave a lease behind that delays
// other candidates.
func releaseBounded(ctx context.Context, l backend.Lease, ttl time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(ttl, time.Second))
	defer cancel()
	_ = l.Release(rctx)
}
