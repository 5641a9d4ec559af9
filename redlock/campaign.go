package redlock

import (
	"context"
	"fmt"
	"log/slog"
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
	b.warm(ctx)
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
			b.logRound(ctx, c, attempt, &r, 0, 0)
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, r.err)
		case w == nil:
			// Held: subscribe to its releases, then try once more at
			// once, so a release between the two is not missed.
			b.logRound(ctx, c, attempt, &r, splits, 0)
			var err error
			if w, err = b.notify.register(ctx, key, campaign); err != nil {
				return nil, err
			}
			continue
		}
		splits = r.splits(splits)
		wait := r.backoff(splits, c.TTL)
		b.logRound(ctx, c, attempt, &r, splits, wait)
		if err := b.pause(ctx, w, wait); err == backend.ErrClosed {
			return nil, fmt.Errorf("redlock: campaign %q: %w", c.Election, err)
		} else if err != nil {
			return nil, err
		}
	}
}

// random reports whether r backs off at random, as after a split: rivals
// split the nodes, or nodes were left out of the round while busy with the
// previous term's release (they are free about a round later).
func (r acquireResult) random() bool { return r.loss == lostSplit || r.loss == lostSkipped }

// splits returns the number of lost rounds in a row that rivals split,
// given the number before r.
func (r acquireResult) splits(before int) int {
	if r.random() {
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
	if r.random() {
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

// logRound logs, at level Debug, round attempt of candidate c, which won no
// lease: when r.err is set, that it failed; otherwise why it was lost
// (outcome, see [loss]) and the wait chosen before the next round (0: at
// once), after splits lost rounds in a row that rivals split. Both lines
// count the replies in when the round was decided (yes, no, failed; pending
// for those not in). A lost line adds, behind a holder, its identity and
// token (or holder_foreign for a lock another library wrote); behind a
// holder or quarantined nodes, free_in, when a quorum can be free (absent
// for never), and capped, whether the wait was cut to the TTL; after a
// split, splits; and the failed nodes' causes. It builds nothing when the
// Logger is nil or does not log Debug.
func (b *Backend) logRound(ctx context.Context, c backend.Candidate, attempt int, r *acquireResult, splits int, wait time.Duration) {
	l := b.cfg.logger
	if l == nil || !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	t := r.tally
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs, slog.String("election", c.Election), slog.String("identity", c.Identity), slog.Int("attempt", attempt))
	if r.err != nil {
		attrs = append(attrs, slog.Duration("took", r.took), slog.Int("yes", t.yes), slog.Int("no", t.no),
			slog.Int("failed", t.failed), slog.Int("pending", t.pending()), slog.Any("error", r.err))
		l.LogAttrs(ctx, slog.LevelDebug, "redlock: campaign round failed", attrs...)
		return
	}
	attrs = append(attrs, slog.String("outcome", r.loss.String()), slog.Duration("took", r.took), slog.Int("yes", t.yes),
		slog.Int("no", t.no), slog.Int("failed", t.failed), slog.Int("pending", t.pending()))
	if r.loss == lostHeld {
		if v, ok := parseValue(r.holder); ok {
			attrs = append(attrs, slog.String("holder_identity", v.identity), slog.Uint64("holder_token", v.token))
		} else {
			attrs = append(attrs, slog.Bool("holder_foreign", true)) // redsync, node-redlock, or not a string
		}
	}
	switch r.loss {
	case lostHeld, lostQuarantined:
		if r.wait != never {
			attrs = append(attrs, slog.Duration("free_in", r.wait))
		}
		if wait > 0 {
			attrs = append(attrs, slog.Bool("capped", r.wait == never || r.wait > c.TTL))
		}
	default:
		attrs = append(attrs, slog.Int("splits", splits))
	}
	attrs = append(attrs, slog.Duration("wait", wait))
	if t.failed > 0 {
		attrs = append(attrs, slog.String("failures", t.nodeErr()))
	}
	l.LogAttrs(ctx, slog.LevelDebug, "redlock: campaign round lost", attrs...)
}
