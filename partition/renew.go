package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
)

// renewParallelism bounds the renewals of one batch in flight at once.
const renewParallelism = 8

// renew renews the leases of batch in the background, renewParallelism at a
// time, each bounded by its deadline minus SafetyMargin; every outcome comes
// back on l.renewed. The renewals outlive ctx: partitions whose OnAssigned
// still drains after Run's ctx ended stay renewed until it returns.
func (l *loop) renew(ctx context.Context, batch []*part) {
	ctx = context.WithoutCancel(ctx)
	margin := l.a.opts.SafetyMargin
	for _, pt := range batch {
		pt.renewing = true
	}
	l.renewing += len(batch)
	work := make(chan *part, len(batch))
	for _, pt := range batch {
		work <- pt
	}
	close(work)
	for range min(renewParallelism, len(batch)) {
		go func() {
			for pt := range work {
				rctx, cancel := context.WithDeadline(ctx, pt.lease.Deadline().Add(-margin))
				began := time.Now()
				err := pt.lease.Renew(rctx)
				took := time.Since(began)
				cancel()
				l.renewed <- renewResult{pt: pt, err: err, took: took, deadline: pt.lease.Deadline()}
			}
		}()
	}
}

// onRenew handles one renewal's outcome: the next renewal is due
// RenewInterval later after a success, after a short jittered backoff after
// a failure; a lease known lost ends the ownership at once.
func (l *loop) onRenew(ctx context.Context, r renewResult) {
	l.renewing--
	pt := r.pt
	pt.renewing = false
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRenew, Term: pt.term, Took: r.took, Err: r.err})
	if r.deadline.After(pt.deadline) {
		pt.deadline = r.deadline // a deadline never moves back
	}
	o := &l.a.opts
	switch {
	case r.err == nil:
		pt.failed = 0
		pt.nextRenew = time.Now().Add(o.RenewInterval)
	case errors.Is(r.err, backend.ErrLost):
		if pt.reason == nil {
			l.end(ctx, pt, fmt.Errorf("%w: %w", elector.ErrLeaseLost, r.err))
		}
	default:
		pt.failed++
		ceil := min(o.RenewInterval/4, 25*time.Millisecond<<min(pt.failed, 20))
		pt.nextRenew = time.Now().Add(max(time.Millisecond, rand.N(ceil+1)))
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "renewal failed; retrying", slog.Int("partition", pt.as.Partition),
			slog.Int("failures", pt.failed), slog.Any("error", r.err))
	}
}
