package redlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// Lease is a candidate's hold on an election at a quorum of the nodes. It
// implements [backend.Lease]. Renew and Release are serialised, so a renewal
// in flight never outlives a release.
type Lease struct {
	b        *Backend
	election string
	key      string
	id       string // value prefix "<lease id> "
	value    string // the stored value: id, token, identity
	token    uint64
	ttl      time.Duration
	lost     chan struct{}
	// last holds the latest request sent to each node for this lease (the
	// winning acquire round, or a later restore round); node i may still be
	// running it. Every later request to node i is ordered after last[i].
	last []*call

	mu       sync.Mutex // serialises Renew, Release and finish
	deadline time.Time
	gone     bool // lost, released or finished: lost is closed
}

var _ backend.Lease = (*Lease)(nil)

// Token returns the lease's fencing token: the maximum of the election's
// counters over the acquiring quorum, written back to a quorum before the
// lease was returned. See the package documentation, # Fencing.
func (l *Lease) Token() uint64 { return l.token }

// Deadline returns the instant, on the monotonic clock, until which the
// lease is surely held at a quorum: the send time of the last successful
// acquire or renew round plus TTL - (TTL × DriftFactor + 2 ms).
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Lost returns a channel closed when a renewal finds that a quorum no longer
// holds the lease, when the lease is released, and on [Backend.Close].
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// markGone closes lost once and forgets the lease. l.mu must be held.
func (l *Lease) markGone() {
	if !l.gone {
		l.gone = true
		close(l.lost)
		l.b.untrack(l)
	}
}

// Renew runs compare-and-pexpire on every node in parallel. It succeeds when
// a quorum still held the lease and answered within the validity measured
// from the renewal's start; the Deadline then moves to that start plus the
// validity. It never re-creates a lease that has lapsed; but once the
// quorum is confirmed, it puts the lease back (SET NX) on the nodes that
// reported the key missing, raising their counters to the token, so that a
// node restarted empty does not leave the holder on a bare quorum that the
// next such restart would break. Those nodes never count toward the quorum.
//
// It returns an error wrapping [backend.ErrLost] (and closes Lost) when so
// many nodes answered that the lease is not theirs that no quorum can hold
// it, or when the Deadline has already passed (the lease may have lapsed, and
// Redlock gives no way to tell that nobody held the election since). It
// returns ctx.Err() when ctx ends first, [backend.ErrClosed] after
// [Backend.Close], and a plain error when too few nodes answered (the lease
// may still be held until its Deadline).
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.gone {
		if l.b.isClosed() {
			return fmt.Errorf("redlock: renew %q: %w", l.election, backend.ErrClosed)
		}
		return fmt.Errorf("redlock: renew %q: %w", l.election, backend.ErrLost)
	}
	start := time.Now()
	if !start.Before(l.deadline) {
		l.markGone()
		l.releaseAsync()
		return fmt.Errorf("redlock: renew %q: %w: past the lease deadline", l.election, backend.ErrLost)
	}
	n, q := len(l.b.clients), l.b.quorum
	ttlArg := strconv.FormatInt(l.ttl.Milliseconds(), 10)
	calls, replied := l.b.round(ctx, l.last, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		return renewScript.Run(ctx, cl, []string{l.key}, l.id, ttlArg).Int64()
	})
	got := l.b.collect(ctx, calls, replied, func(got []*call) bool {
		return countInt(got, 1) >= q || countInt(got, 0)+countInt(got, -1) > n-q
	})
	ok, notOurs := countInt(got, 1), countInt(got, 0)+countInt(got, -1)
	switch {
	case ok >= q:
		if elapsed := time.Since(start); elapsed >= l.ttl-l.b.cfg.driftFor(l.ttl) {
			return fmt.Errorf("redlock: renew %q: late quorum: %d of %d nodes in %v, past the validity of a %v TTL", l.election, ok, n, elapsed, l.ttl)
		}
		if d := l.b.deadline(start, l.ttl); d.After(l.deadline) {
			l.deadline = d
		}
		if mayMiss(got) {
			l.restore(ctx, calls, ttlArg)
		}
		return nil
	case notOurs > n-q:
		l.markGone()
		l.releaseAsync()
		return fmt.Errorf("redlock: renew %q: %w: %d of %d nodes no longer hold it", l.election, backend.ErrLost, notOurs, n)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("redlock: renew %q: %d of %d nodes confirmed, need %d: %s", l.election, ok, n, q, nodeErr(firstErr(got)))
}

// mayMiss reports whether some node of a renew round reported the key
// missing, or has not replied yet and so still may.
func mayMiss(got []*call) bool {
	for _, g := range got {
		if g == nil || (g.err == nil && g.val.(int64) == -1) {
			return true
		}
	}
	return false
}

// restore puts the lease back, in the background, on the nodes whose reply
// to the renew round calls is -1 (key missing): each request waits for that
// node's renew request and reads its reply, so a slow node's answer counts
// too. Later requests of the lease (Release, the next Renew) are ordered
// after these, so none can overtake a restore on its node.
func (l *Lease) restore(ctx context.Context, calls []*call, ttlArg string) {
	byClient := make(map[redis.UniversalClient]*call, len(calls))
	for i, c := range calls {
		byClient[l.b.clients[i]] = c
	}
	token := strconv.FormatUint(l.token, 10)
	l.last, _ = l.b.round(context.WithoutCancel(ctx), calls, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		if c := byClient[cl]; c.err != nil || c.val.(int64) != -1 {
			return int64(0), nil
		}
		return restoreScript.Run(ctx, cl, []string{l.key, l.key + counterSuffix}, l.value, ttlArg, token).Int64()
	})
}

// Release runs compare-and-delete on every node in parallel, each deletion
// announced on the release channel so waiting candidates retry at once. It
// succeeds once so many nodes no longer hold the lease that no quorum can;
// the deletions still in flight go on in the background, bounded by
// NodeTimeout. Lost is then closed and Renew returns [backend.ErrLost].
// Releasing a lease that is already gone returns nil. On failure (too few
// nodes answered, or ctx ended: ctx.Err()) the lease stays as it was.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.release(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redlock: release %q: %w", l.election, err)
	}
	l.markGone()
	return nil
}

// release runs one release round; l.mu must be held.
func (l *Lease) release(ctx context.Context) error {
	n, q := len(l.b.clients), l.b.quorum
	calls, replied := l.b.round(context.WithoutCancel(ctx), l.last, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
		return releaseScript.Run(ctx, cl, []string{l.key}, l.id).Int64()
	})
	got := l.b.collect(ctx, calls, replied, func(got []*call) bool {
		return n-countInt(got, 1)-countInt(got, 0)-countInt(got, -1) < q
	})
	if mayHold := n - countInt(got, 1) - countInt(got, 0) - countInt(got, -1); mayHold >= q {
		return fmt.Errorf("%d of %d nodes may still hold it, need fewer than %d: %s", mayHold, n, q, nodeErr(firstErr(got)))
	}
	return nil
}

// releaseAsync deletes what is left of a lost lease on the nodes, in the
// background, so its fragments do not delay other candidates.
func (l *Lease) releaseAsync() {
	l.b.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.b.cfg.nodeTimeout)
		defer cancel()
		calls, replied := l.b.round(ctx, l.last, func(ctx context.Context, cl redis.UniversalClient) (any, error) {
			return releaseScript.Run(ctx, cl, []string{l.key}, l.id).Int64()
		})
		l.b.collect(ctx, calls, replied, nil)
	})
}

// finish releases the lease on Close, best effort, and closes Lost.
func (l *Lease) finish(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return
	}
	_ = l.release(ctx) // a node that does not answer lets the key expire
	l.markGone()
}
