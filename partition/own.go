package partition

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// part is a partition this member owns, or owned and is handing over. Its
// lease runs on the term engine (internal/term), which renews it, ends it at
// its step-down point or on its loss, and runs OnAssigned.
type part struct {
	as       Assignment
	term     elector.Term
	t        *term.Term
	reason   error // why ownership ended; nil while it lasts
	returned bool  // OnAssigned has returned (or was not called: t.Late)
	// releasing: the release (then OnRevoked) is under way.
	releasing bool
}

// hold starts owning partition p under lease ls, won with the given
// Deadline: the term engine runs its lease and OnAssigned.
func (l *loop) hold(ctx context.Context, p int, ls backend.Lease, deadline time.Time) {
	o := &l.a.opts
	as := Assignment{Group: l.a.group, Partition: p, Token: ls.Token()}
	pt := &part{
		as:   as,
		term: elector.Term{Election: Election(l.a.group, p), Identity: o.Identity, Token: as.Token, Start: time.Now()},
	}
	l.parts[p] = pt
	l.plan.replan = true
	if id, ok := l.plan.awaited[p]; ok && !l.isMember(id) {
		l.plan.raceWon = true
	}
	delete(l.retries, p)
	l.a.setOwned(as, true)
	l.a.observe(p, elector.Event{Kind: elector.EventElected, Term: pt.term})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "assigned", slog.Int("partition", p), slog.Uint64("token", as.Token))
	pt.t = term.Start(l.a.b, ctx, ls, deadline, l.a.timing(), term.Hooks{
		Callback: "OnAssigned",
		Renewed:  func(r term.Renewal) { l.renewed(ctx, pt, r) },
		Ended:    func(reason error) { l.in.post(pt, reason) },
		Returned: func() { l.in.post(pt, nil) },
		Before: func() {
			if l.beforeAssigned != nil {
				l.beforeAssigned(p)
			}
		},
	})
	pt.t.Go(func(actx context.Context) {
		if o.OnAssigned != nil {
			o.OnAssigned(actx, as)
		}
	})
}

// renewed reports a renewal of pt's lease: an event, and a warning for a
// failure that did not lose the lease.
func (l *loop) renewed(ctx context.Context, pt *part, r term.Renewal) {
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRenew, Term: pt.term, Took: r.Took, Err: r.Err})
	if r.Err != nil && !errors.Is(r.Err, backend.ErrLost) {
		l.a.log.LogAttrs(ctx, term.RetryLevel(r.Failures), "renewal failed; retrying", slog.Int("partition", pt.as.Partition),
			slog.Int("failures", r.Failures), slog.Any("error", r.Err), slog.Duration("retry_in", r.RetryIn))
	}
}

// onInbox handles what the engine reported: terms it ended (their lease
// lost or past its step-down point, or OnAssigned not started in time), and
// callbacks returned.
func (l *loop) onInbox(ctx context.Context) {
	for _, ev := range l.in.take() {
		switch pt := ev.pt; {
		case ev.ended != nil:
			if pt.reason == nil {
				l.end(ctx, pt, ev.ended)
			}
		default:
			pt.returned = true
		}
	}
}

// end ends the ownership of pt: its ctx is cancelled now; the lease is
// released once OnAssigned has returned. Until then a partition handed over
// stays renewed, so no new owner can act while OnAssigned still does.
func (l *loop) end(ctx context.Context, pt *part, reason error) {
	pt.reason = pt.t.End(reason)
	l.plan.replan = true
	l.a.setOwned(pt.as, false)
	l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventEnded, Term: pt.term, Err: pt.reason})
	l.a.log.LogAttrs(ctx, slog.LevelDebug, "revoking", slog.Int("partition", pt.as.Partition),
		slog.Uint64("token", pt.as.Token), slog.Any("reason", pt.reason))
}

// release gives pt's lease back, then calls OnRevoked, in the background.
func (l *loop) release(ctx context.Context, pt *part) {
	pt.releasing = true
	o := &l.a.opts
	go func() {
		began := time.Now()
		err := pt.t.Release(ctx)
		l.warnRelease(ctx, err)
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRelease, Term: pt.term, Took: time.Since(began), Err: err})
		l.a.observe(pt.as.Partition, elector.Event{Kind: elector.EventRevoked, Term: pt.term, Err: pt.reason})
		if o.OnRevoked != nil && !pt.t.Late() {
			o.OnRevoked(pt.as, pt.reason)
		}
		l.released <- pt
	}()
}

// releaseStray gives back a lease won by a campaign no longer wanted.
func (l *loop) releaseStray(ctx context.Context, ls backend.Lease) {
	l.strays++
	go func() {
		l.warnRelease(ctx, term.Release(ctx, ls, l.a.timing()))
		l.strayDone <- struct{}{}
	}()
}

// warnRelease logs a failed release, except of a lease found already gone.
func (l *loop) warnRelease(ctx context.Context, err error) {
	if err != nil && !errors.Is(err, backend.ErrLost) {
		l.a.log.LogAttrs(ctx, slog.LevelWarn, "release failed; the election stays held until the driver deletes the lease or it lapses", slog.Any("error", err))
	}
}
