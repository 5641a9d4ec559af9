package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

// timing returns the timing of the Elector's leases for the term engine.
func (e *Elector) timing() term.Timing {
	return term.Timing{TTL: e.opts.TTL, RenewInterval: e.opts.RenewInterval, SafetyMargin: e.opts.SafetyMargin}
}

// lead runs one term on lease l, won with Deadline won, on the term engine
// (package internal/term: renewals, step-down, the check before OnElected
// starts, the lost-lease path): it waits for the term to end, then for
// OnElected to return, releases the lease and calls OnRevoked. It reports
// whether the term ended by resignation.
//
// Run's goroutine waits out the term in serve, under Run's frame and this
// one; the start and the end of a term are in begin and end, so that these
// frames stay small. The garbage collector halves a parked goroutine's
// stack only while it uses less than a quarter of it (less a fixed
// reserve): a campaign that grew the stack to 8 KB leaves it at 4 KB only
// when the frames it waits under are small.
func (e *Elector) lead(ctx context.Context, l backend.Lease, won time.Time) (resigned bool) {
	ts, t := e.begin(ctx, l, won)
	resign, reason := e.serve(ctx, t, ts)
	return e.end(ctx, ts, t, resign, reason)
}

// begin starts the term on lease l, won with Deadline won: it records it,
// reports it, and starts it on the engine with OnElected in its own
// goroutine.
func (e *Elector) begin(ctx context.Context, l backend.Lease, won time.Time) (*termState, *term.Term) {
	o := &e.opts
	ts := &termState{
		term:  Term{Election: e.election, Identity: o.Identity, Token: l.Token(), Start: time.Now()},
		lease: l,
		ended: make(chan struct{}),
	}
	e.mu.Lock()
	e.term = ts
	e.mu.Unlock()
	e.observe(Event{Kind: EventElected, Term: ts.term})
	e.log.LogAttrs(ctx, slog.LevelInfo, "elected",
		slog.Uint64("token", ts.term.Token), slog.Duration("deadline_in", time.Until(won)))

	t := term.Start(e.b, context.WithValue(ctx, termKey{}, ts), l, won, e.timing(), term.Hooks{
		Callback: "OnElected",
		Renewed:  func(r term.Renewal) { e.renewed(ctx, ts.term, r) },
		Before:   e.beforeElected,
	})
	t.Go(func(tctx context.Context) {
		if o.OnElected != nil {
			o.OnElected(tctx, ts.term)
		}
	})
	return ts, t
}

// end ends the term for reason (the engine's reason if it ended the term
// first): it stops acting as leader, waits for OnElected to return,
// releases the lease, calls OnRevoked, and answers the resignation request
// if there is one. It reports whether there was.
func (e *Elector) end(ctx context.Context, ts *termState, t *term.Term, resign *resignRequest, reason error) (resigned bool) {
	o := &e.opts
	reason = t.End(reason) // the engine's reason if it ended the term first

	// The term has ended: stop acting as leader.
	e.mu.Lock()
	ts.endedAt = time.Now()
	e.mu.Unlock()
	close(ts.ended)
	e.observe(Event{Kind: EventEnded, Term: ts.term, Err: reason})
	level := slog.LevelInfo
	if errors.Is(reason, ErrLeaseLost) {
		level = slog.LevelWarn
	}
	e.log.LogAttrs(ctx, level, "term ended", slog.Uint64("token", ts.term.Token), slog.Any("reason", reason))

	e.awaitReturn(ctx, ts, t) // renewed meanwhile after a voluntary end
	t.Finish()
	if resign != nil && e.prefs != nil {
		e.prefs.resigned(ctx)
	}
	relErr := e.release(ctx, ts.lease, ts.term)
	if errors.Is(relErr, backend.ErrClosed) && !errors.Is(reason, backend.ErrClosed) {
		// Whatever the engine saw first, the Backend was closed under the
		// term (by OnElected, or by another goroutine): that is the reason.
		reason = fmt.Errorf("%w: the backend was closed: %w", ErrLeaseLost, backend.ErrClosed)
	}
	e.mu.Lock()
	e.term = nil
	e.mu.Unlock()
	e.log.LogAttrs(ctx, slog.LevelInfo, "revoked", slog.Uint64("token", ts.term.Token), slog.Any("reason", reason))
	e.observe(Event{Kind: EventRevoked, Term: ts.term, Err: reason})
	if o.OnRevoked != nil && !t.Late() {
		o.OnRevoked(ts.term, reason)
	}
	if resign != nil {
		resign.reply <- relErr
	}
	return resign != nil
}

// awaitReturn waits for OnElected to return after its term ended. If it
// has not within TTL (the point at which Check reports it), it warns once:
// the leader's work ignores its ctx, and no new term starts until it
// returns.
func (e *Elector) awaitReturn(ctx context.Context, ts *termState, t *term.Term) {
	stuck := time.NewTimer(e.opts.TTL)
	defer stuck.Stop()
	select {
	case <-t.Returned():
		return
	case <-stuck.C:
	}
	e.log.LogAttrs(ctx, slog.LevelWarn, "OnElected has not returned since its term ended; it must return once its ctx is done, and no new term starts until it does",
		slog.Uint64("token", ts.term.Token), slog.Duration("ended_ago", e.opts.TTL))
	<-t.Returned()
}

// serve waits until the term ends and returns why: ctx ended, the engine
// ended it (the lease was lost or could not be renewed before the step-down
// point, or OnElected could not start in time), Resign was called (the
// request is then returned too), or the leader yields: to a candidate of a
// higher priority, or because the lease's store asks it to
// ([backend.Yielder]).
func (e *Elector) serve(ctx context.Context, t *term.Term, ts *termState) (*resignRequest, error) {
	returned := t.Returned()
	var yield, asked <-chan struct{}
	if e.prefs != nil {
		y, stop := e.prefs.yieldWhen(ts.term.Start)
		defer stop()
		yield = y
	}
	if y, ok := ts.lease.(backend.Yielder); ok {
		asked = y.Yield()
	}
	for {
		select {
		case <-yield:
			return nil, ErrPreempted
		case <-asked:
			return nil, fmt.Errorf("%w: the backend asks the leader to yield (a preferred holder is named)", ErrPreempted)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.Ended():
			return nil, t.Reason()
		case req := <-e.resignCh:
			if req.ts != ts {
				req.reply <- ErrNotLeader
				continue
			}
			return req, ErrResigned
		case <-returned:
			returned = nil
			if !t.Late() {
				e.logReturned(ctx, ts.term.Token)
			}
		}
	}
}

// logReturned logs that OnElected returned while its term lasts.
func (e *Elector) logReturned(ctx context.Context, token uint64) {
	e.log.LogAttrs(ctx, slog.LevelInfo, "OnElected returned; still leading until the term ends", slog.Uint64("token", token))
}

// renewed reports a renewal attempt of the term's lease: an event, and a
// log line (Warn for a failure that did not lose the lease).
func (e *Elector) renewed(ctx context.Context, t Term, r term.Renewal) {
	e.observe(Event{Kind: EventRenew, Term: t, Took: r.Took, Err: r.Err})
	switch {
	case r.Err == nil:
		if e.log.Enabled(ctx, slog.LevelDebug) {
			e.log.LogAttrs(ctx, slog.LevelDebug, "renewed",
				slog.Uint64("token", t.Token), slog.Duration("deadline_in", time.Until(r.Deadline)))
		}
	case errors.Is(r.Err, backend.ErrLost):
	default:
		if level := term.RetryLevel(r.Failures); e.log.Enabled(ctx, level) {
			e.log.LogAttrs(ctx, level, "renew failed; retrying before the deadline",
				slog.Uint64("token", t.Token), slog.Int("failures", r.Failures), slog.Any("error", r.Err),
				slog.Duration("step_down_in", r.StepDownIn), slog.Duration("retry_in", r.RetryIn))
		}
	}
}

func isNoLeader(err error) bool { return errors.Is(err, backend.ErrNoLeader) }
