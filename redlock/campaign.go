package redlock

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/leaderkit/elector/backend"
)

// never stands for "not within any wait worth a timer".
const never = time.Duration(math.MaxInt64)

// Campaign blocks until candidate c holds its election at a quorum of the
// nodes, then returns the lease; see the package documentation for the
// algorithm. While another candidate holds the election it sleeps until the
// holder's keys can have expired (the remaining PTTL the nodes reported,
// plus a few milliseconds of jitter) and wakes at once when a release is
// announced on the nodes; while rival candidates split the nodes among
// themselves it backs off at random.
//
// It returns ctx.Err() when ctx ends first, after sending compare-and-delete
// to every node its last round may have reached. It returns an error wrapping
// [backend.ErrInvalid] for an invalid election name or identity, or a TTL
// below [MinTTL]; [backend.ErrClosed] after Close; and a plain error when too
// few nodes answered to reach a quorum, or the quorum came too late to leave
// any validity (the caller retries).
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := b.check(c.Election); err != nil {
		return nil, err
	}
	if err := backend.ValidateIdentity(c.Identity); err != nil {
		return nil, err
	}
	if err := checkTTL(c.Election, c.TTL); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.TTL = ttlMillis(c.TTL)
	key := b.lockKey(c.Election)
	campaign := newCampaignID()
	var w *waiter // subscribed to releases once the election is found held
	defer func() {
		if w != nil {
			b.notify.unregister(w)
		}
	}()

	splits := 0 // lost rounds in a row that rivals split
	for attempt := 0; ; attempt++ {
		if w != nil {
			w.drain()
		}
		began, err := b.gate.enter(ctx, b.done)
		if err == backend.ErrClosed {
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, err)
		} else if err != nil {
			return nil, err
		}
		r := b.acquire(ctx, key, leaseID(campaign, attempt), c)
		b.gate.leave(began, r.slow)
		switch {
		case r.lease != nil:
			return r.lease, nil
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case r.err != nil:
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, r.err)
		case w == nil:
			// Held: subscribe to its releases, then try once more at
			// once, so a release between the two is not missed.
			var err error
			if w, err = b.notify.register(ctx, key, campaign); err != nil {
				return nil, err
			}
			continue
		}
		splits = r.splits(splits)
		if err := b.pause(ctx, w, r.backoff(splits, c.TTL)); err == backend.ErrClosed {
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, err)
		} else if err != nil {
			return nil, err
		}
	}
}

// splits returns the number of lost rounds in a row that rivals split,
// given the number before r.
func (r acquireResult) splits(before int) int {
	if r.split {
		return before + 1
	}
	return 0
}

// backoff returns how long a candidate waits after losing round r, the
// splits-th split in a row.
//
// Behind a holder it waits until the holder's keys can have expired on
// enough nodes to leave a quorum free (at most a TTL, for a holder whose
// keys do not expire), plus 1 ms and up to 10 ms (TTL/50 at most) of jitter.
// When rivals split the nodes, their failed rounds delete their keys at
// once (without a notification), which takes them about as long as a
// round; so it backs off at random for up to 2^splits times the round's
// duration (at least 1 ms, at most TTL/4), and the next round is unlikely
// to tie again, however slow the nodes or this host are.
func (r acquireResult) backoff(splits int, ttl time.Duration) time.Duration {
	if r.split {
		unit := max(r.took, time.Millisecond)
		return time.Duration(rand.Int64N(int64(min(unit<<min(splits, 16), ttl/4)) + 1))
	}
	wait := r.wait
	if wait == never || wait > ttl {
		wait = ttl
	}
	return wait + time.Millisecond + time.Duration(rand.Int64N(int64(min(ttl/50, 10*time.Millisecond))+1))
}

// pause waits for d, or until a release is announced on w. It returns
// ctx.Err() when ctx ends first, and [backend.ErrClosed] when the Backend
// closes.
func (b *Backend) pause(ctx context.Context, w *waiter, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return backend.ErrClosed
	case <-w.ch:
	case <-t.C:
	}
	return nil
}
