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

// lease is a candidate's hold on an election at a quorum of the nodes: the
// [backend.Lease] that Campaign returns. Renew and Release are serialised,
// so a renewal in flight never outlives a release.
type lease struct {
	b        *Backend
	election string
	key      string
	id       string // value prefix "<lease id> "
	value    string // the stored value: id, token, identity
	token    uint64
	ttl      time.Duration
	lost     chan struct{}
	// last is closed, by node, when the latest request sent to that node
	// for this lease (the winning acquire round, or a later restore round)
	// has finished. Every later request to node i is ordered after last[i].
	last []<-chan struct{}
	// skipped marks, by node, the nodes the winning acquire round left out
	// (see Backend.lagging) and no renewal has reached since: they cannot
	// hold the key, so Release sends them nothing. Nil when there are none.
	skipped []bool

	mu       sync.Mutex // serialises Renew, Release and finish
	deadline time.Time
	gone     bool // lost, released or finished: lost is closed
	// renewed is the send time of the latest batch that renewed the
	// lease, used that of the one the latest Renew succeeded on (see
	// batch.go); zero before any.
	renewed, used time.Time
}

var _ backend.Lease = (*lease)(nil)

// Token returns the lease's fencing token: the maximum of the election's
// counters over the acquiring quorum, written back to a quorum before the
// lease was returned. See the package documentation, # Fencing.
func (l *lease) Token() uint64 { return l.token }

// Deadline returns the instant, on the monotonic clock, until which the
// lease is surely held at a quorum: the send time of the last successful
// acquire or renew round plus TTL - (TTL × DriftFactor + 2 ms).
func (l *lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline
}

// Lost returns a channel closed when a renewal finds that a quorum no longer
// holds the lease, when the lease is released, and on [Backend.Close].
func (l *lease) Lost() <-chan struct{} { return l.lost }

// markGone closes lost once and forgets the lease. l.mu must be held.
func (l *lease) markGone() {
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
//
// On a Backend over single Redis servers the request is a share of a
// batched call, and a Renew that follows a batch which renewed the lease
// early sends nothing (see renewBatched).
func (l *lease) Renew(ctx context.Context) error {
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
	ttlArg := strconv.FormatInt(l.ttl.Milliseconds(), 10)
	if l.b.batch != nil {
		return l.renewBatched(ctx, start, ttlArg)
	}
	l.skipped = nil // the renewal reaches every node, and may restore the key there
	r := startRoundFor(ctx, l.b, l.b.renewBound(start, l.deadline), l.last, nil, counted(l.b, func(ctx context.Context, cl redis.UniversalClient, _ int) (answer, error) {
		return answerOf(renewScript.Run(ctx, cl, []string{l.key}, l.id, ttlArg).Int64())
	}))
	_, t := r.collect(ctx, l.b.decideRenew)
	return l.settle(ctx, start, r, t, ttlArg)
}

// renewBound returns how long, from now, the requests of a renewal of a
// lease whose Deadline is deadline may wait for their replies: until that
// Deadline, and at least RequestTimeout. A renewal's validity counts from
// its send time, so a reply that comes late but before the Deadline still
// renews the lease; a reply after it cannot (settle refuses a late
// quorum). A starved process, or a node slowed for a moment, thus costs a
// renewal nothing as long as the lease has time left, where the acquire's
// tight bound would have failed it.
func (b *Backend) renewBound(now, deadline time.Time) time.Duration {
	return max(b.cfg.requestTimeout, deadline.Sub(now))
}

// decideRenew reports whether a renewal's tally is decided: a quorum
// confirmed, or so many nodes denied that no quorum can.
func (b *Backend) decideRenew(t tally) bool {
	return t.yes >= b.quorum || t.no+t.missing > len(b.clients)-b.quorum
}

// settle applies the tally of a renewal round sent at start, l.mu held: the
// Deadline moves on a timely quorum, Lost closes when no quorum can hold
// the lease. It returns Renew's error.
func (l *lease) settle(ctx context.Context, start time.Time, r *round[answer], t tally, ttlArg string) error {
	n, q := len(l.b.clients), l.b.quorum
	switch {
	case t.yes >= q:
		d := l.b.cfg.deadline(start, l.ttl)
		if elapsed := time.Since(start); !time.Now().Before(d) {
			return fmt.Errorf("redlock: renew %q: late quorum: %d of %d nodes in %v, past the validity of a %v TTL", l.election, t.yes, n, elapsed, l.ttl)
		}
		if d.After(l.deadline) {
			l.deadline = d
		}
		if t.missing > 0 || t.pending() > 0 || t.failed > 0 { // some node lost the key, or still may say so
			l.restore(ctx, r, ttlArg)
		}
		return nil
	case t.no+t.missing > n-q:
		l.markGone()
		l.releaseAsync()
		return fmt.Errorf("redlock: renew %q: %w: %d of %d nodes no longer hold it", l.election, backend.ErrLost, t.no+t.missing, n)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("redlock: renew %q: %d of %d nodes confirmed, need %d: %s", l.election, t.yes, n, q, t.nodeErr())
}

// restore puts the lease back, in the background, on the nodes whose reply
// to the renew round is -1 (key missing): a node still to reply is handled
// when its reply comes in, so a slow node's answer counts too. Later
// requests of the lease (Release, the next Renew) are ordered after these,
// so none can overtake a restore on its node. A node that replied that it
// holds the key needs nothing, and a node still to reply costs no
// goroutine while it is awaited: a batch whose quorum answered leaves the
// rest of its nodes pending for every lease it renewed.
func (l *lease) restore(ctx context.Context, renew *round[answer], ttlArg string) {
	ctx = context.WithoutCancel(ctx)
	last := make([]<-chan struct{}, len(renew.replies))
	for i, rep := range renew.replies {
		select {
		case <-rep.done:
			if !lostKey(rep) {
				last[i] = rep.done // the common case: nothing to order after
				continue
			}
		default:
		}
		restored := make(chan struct{})
		last[i] = restored
		renew.whenDone(i, func() { l.restoreOn(ctx, i, rep, ttlArg, restored) })
	}
	l.last = last
}

// restoreOn puts the lease back on node i if its renew reply rep says the
// key is missing there, on the node's worker, bounded by RequestTimeout, and
// closes restored when that is done (at once when nothing is to be done).
func (l *lease) restoreOn(ctx context.Context, i int, rep *reply[answer], ttlArg string, restored chan struct{}) {
	if !lostKey(rep) {
		close(restored)
		return
	}
	keys := []string{l.key, l.key + counterSuffix}
	token := strconv.FormatUint(l.token, 10)
	cl := l.b.clients[i]
	if !l.b.onNode(i, func() {
		defer close(restored)
		rctx, cancel := context.WithTimeout(ctx, l.b.cfg.requestTimeout)
		defer cancel()
		_ = restoreScript.Run(rctx, cl, keys, l.value, ttlArg, token).Err()
	}) {
		close(restored)
	}
}

// Release runs compare-and-delete on every node in parallel, each deletion
// announced on the release channel so waiting candidates retry at once. It
// succeeds once so many nodes no longer hold the lease that no quorum can;
// the deletions still in flight go on in the background, bounded by
// RequestTimeout. Lost is then closed and Renew returns [backend.ErrLost].
// Releasing a lease that is already gone returns nil. On failure (too few
// nodes answered, or ctx ended: ctx.Err()) the lease is given up all the
// same: Lost is closed, and the keys left on the nodes lapse by their PTTL.
func (l *lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		if l.b.isClosed() {
			return fmt.Errorf("redlock: release %q: %w", l.election, backend.ErrClosed)
		}
		return nil
	}
	// A failed Release gives the lease up all the same (see
	// [backend.Lease]): nothing renews its keys any more, and those the
	// round did not delete (its requests run on after ctx ends) lapse by
	// their PTTL, at the latest just after the Deadline.
	defer l.markGone()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.release(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("redlock: release %q: %w", l.election, err)
	}
	return nil
}

// release runs one release round; l.mu must be held.
func (l *lease) release(ctx context.Context) error {
	q := l.b.quorum
	free := 0 // nodes that never held the key
	for _, s := range l.skipped {
		if s {
			free++
		}
	}
	r := l.releaseRound(context.WithoutCancel(ctx))
	_, t := r.collect(ctx, func(t tally) bool { return t.nodes-free-t.answered() < q })
	if mayHold := t.nodes - free - t.answered(); mayHold >= q {
		return fmt.Errorf("%d of %d nodes may still hold it, need fewer than %d: %s", mayHold, t.nodes, q, t.nodeErr())
	}
	return nil
}

// releaseRound sends releaseScript to every node the lease may hold, each
// after the lease's latest request there; the Backend's next acquire of the
// key follows it (on a node left out, the request the node was busy with).
func (l *lease) releaseRound(ctx context.Context) *round[answer] {
	r := startRoundSkip(ctx, l.b, l.last, l.skipped, func(ctx context.Context, cl redis.UniversalClient, _ int) (answer, error) {
		return answerOf(releaseScript.Run(ctx, cl, []string{l.key}, l.id).Int64())
	})
	l.b.noteRelease(l.key, r.chain())
	return r
}

// releaseAsync deletes what is left of a lost lease on the nodes, in the
// background, so its fragments do not delay other candidates.
func (l *lease) releaseAsync() {
	l.b.spawn(func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.b.cfg.requestTimeout)
		defer cancel()
		l.releaseRound(ctx).collect(ctx, nil)
	})
}

// finish releases the lease on Close, best effort, and closes Lost.
func (l *lease) finish(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return
	}
	_ = l.release(ctx) // a node that does not answer lets the key expire
	l.markGone()
}
