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
// The order is fixed, old then new, in every phase, so two candidates can
// never each hold one side while waiting for the other.
func (b *Backend) campaignBoth(ctx context.Context, c backend.Candidate, mark bool) (*lease, error) {
	if b.seenMarked(c.Election) {
		return b.campaignNewOnly(ctx, c)
	}
	lo, err := b.campaignOld(ctx, c)
	if errors.Is(err, errMarked) {
		b.setMarked(c.Election)
		return b.campaignNewOnly(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	ln, err := b.campaignNewHolding(ctx, c, lo)
	if err != nil {
		releaseBounded(ctx, lo, c.TTL)
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
	var wg sync.WaitGroup
	if watcher {
		wg.Go(func() {
			t := time.NewTimer(markerWatchDelay)
			defer t.Stop()
			select {
			case <-octx.Done():
				return
			case <-t.C:
			}
			b.watchMarker(octx, w, c, cancel)
		})
	}
	lo, err := b.old.Campaign(octx, c)
	cause := context.Cause(octx)
	cancel(nil)
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

// campaignNewHolding campaigns on the new backend while keeping lo, the old
// backend's lease, renewed. It gives up when lo is lost or its deadline
// passes, so a term never starts on an old lease that lapsed meanwhile.
func (b *Backend) campaignNewHolding(ctx context.Context, c backend.Candidate, lo backend.Lease) (backend.Lease, error) {
	nctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { b.keepOld(nctx, c.TTL, lo, cancel) })
	ln, err := b.new.Campaign(nctx, c)
	cause := context.Cause(nctx)
	cancel(nil)
	wg.Wait()
	if err == nil && !time.Now().Before(lo.Deadline()) {
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
// deadline.
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
