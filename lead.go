package elector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector/backend"
)

// errNoRenewal is the cause of a term that ended because no renewal
// succeeded before the step-down point.
var errNoRenewal = errors.New("no renewal succeeded before the lease deadline minus the safety margin")

// renewer runs one Renew attempt at a time in the background, so that the
// term loop keeps watching Lost, the step-down timer and Resign meanwhile.
type renewer struct {
	e       *Elector
	l       backend.Lease
	term    Term
	timer   *time.Timer // next attempt
	began   time.Time   // when the attempt in flight began
	result  chan error  // non-nil while an attempt is in flight
	cancel  context.CancelFunc
	failed  int       // consecutive failures
	lastErr error     // the last failure's error
	trails  bool      // the lease is a backend.TrailingLease that trails
	proved  time.Time // when the last successful attempt (or the term) began, for a backend.TrailingLease
}

// start begins an attempt bounded by until.
func (r *renewer) start(ctx context.Context, until time.Time) {
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), until)
	r.cancel = cancel
	r.began = time.Now()
	r.result = make(chan error, 1)
	go func(ch chan<- error) { ch <- r.l.Renew(rctx) }(r.result)
}

// next returns how long to wait for the next attempt after the lease was
// won or renewed (for a backend.TrailingLease, see there): until the lease's
// Deadline less TTL, plus RenewInterval,
// which is RenewInterval after the send time of the request that proved the
// lease (less the drift bound), or, when that is less than a quarter of
// RenewInterval away, the next instant of a process-wide grid of that
// quarter (see onGrid).
// Counting from the Deadline rather than from when the attempt returned
// keeps the schedules of elections whose leases a driver renews together
// (one etcd keepalive, one ZooKeeper session, one Redis batch) in step, so
// that their next renewals find one request to share instead of drifting
// apart by their latencies.
func (r *renewer) next() time.Duration {
	if r.trails {
		return gridAfter(r.e.opts.RenewInterval, r.e.opts.RenewInterval/8)
	}
	floor := r.e.opts.RenewInterval / 4
	if d := r.until(); d >= floor {
		return d
	}
	return onGrid(floor)
}

// renewGrid is the origin of onGrid's instants, shared by every Elector of
// the process.
var renewGrid = time.Now()

// onGrid returns how long until the next instant on a process-wide grid of
// the given period, at least half a period away. Renewals that are always
// due run on it at the floor's rate, and the renewals of a backend.TrailingLease at
// RenewInterval, so that the elections sharing a session renew at the same
// instants and share one request, instead of each renewing on a phase set
// by its own latencies.
func onGrid(period time.Duration) time.Duration { return gridAfter(period, period/2) }

// gridAfter returns how long until the next instant on the process-wide
// grid of the given period that is at least least away.
func gridAfter(period, least time.Duration) time.Duration {
	phase := (time.Since(renewGrid)%period + period) % period
	d := period - phase
	if d < least {
		d += period
	}
	return d
}

// until returns how long until a renewal is due: RenewInterval after the
// proof behind the lease's current Deadline, or for a backend.TrailingLease an
// eighth of an interval after the last successful renewal began. A driver may move the Deadline between
// renewals (a Redis batch that renews idle leases early): the attempt then
// waits for the new due time, so that the elections sharing that proof are
// due together.
func (r *renewer) until() time.Duration {
	o := &r.e.opts
	if r.trails {
		return time.Until(r.proved.Add(o.RenewInterval / 8))
	}
	return time.Until(r.l.Deadline().Add(o.RenewInterval - o.TTL))
}

// fire handles the timer: it starts an attempt bounded by until if one is
// due, and otherwise sets the timer for when one is.
func (r *renewer) fire(ctx context.Context, until time.Time) {
	if d := r.until(); d > 0 {
		r.timer.Reset(d)
		return
	}
	r.start(ctx, until)
}

// done records an attempt's outcome. It reports an error wrapping
// backend.ErrLost when the lease is known gone, and nil otherwise; on
// success the next attempt is scheduled by next, on failure after a
// backoff.
func (r *renewer) done(ctx context.Context, err error) error {
	r.cancel()
	r.result = nil
	r.e.observe(Event{Kind: EventRenew, Term: r.term, Took: time.Since(r.began), Err: err})
	o := &r.e.opts
	switch {
	case err == nil:
		r.failed, r.lastErr = 0, nil
		r.proved = r.began
		r.timer.Reset(r.next())
		if r.e.log.Enabled(ctx, slog.LevelDebug) { // a Deadline costs a driver's lock
			r.e.log.LogAttrs(ctx, slog.LevelDebug, "renewed",
				slog.Uint64("token", r.l.Token()), slog.Duration("deadline_in", time.Until(r.l.Deadline())))
		}
		return nil
	case errors.Is(err, backend.ErrLost):
		return err
	}
	r.failed++
	r.lastErr = err
	// Back off, but never past half the time left before the step-down
	// point, so that a backend that recovers in time is retried in time.
	left := time.Until(r.l.Deadline()) - o.SafetyMargin
	wait := min(backoff(r.failed, o.RenewInterval/2), max(left/2, time.Millisecond))
	r.timer.Reset(wait)
	r.e.log.LogAttrs(ctx, slog.LevelWarn, "renew failed; retrying before the deadline",
		slog.Uint64("token", r.l.Token()), slog.Any("error", err),
		slog.Duration("step_down_in", time.Until(r.l.Deadline())-o.SafetyMargin), slog.Duration("retry_in", wait))
	return nil
}

// why says why no renewal has succeeded yet, for a step-down's reason.
func (r *renewer) why() string {
	switch {
	case r.result != nil && r.lastErr != nil:
		return fmt.Sprintf("an attempt was still in flight; the one before failed: %v", r.lastErr)
	case r.result != nil:
		return "an attempt was still in flight"
	case r.lastErr != nil:
		return fmt.Sprintf("last error: %v", r.lastErr)
	}
	return "no attempt was due"
}

// stop abandons any attempt in flight and waits for it to return.
func (r *renewer) stop() {
	r.timer.Stop()
	if r.result != nil {
		r.cancel()
		<-r.result
		r.result = nil
	}
}

// term is one term in progress: what lead's serve and drain phases share.
type term struct {
	e        *Elector
	ts       *termState
	l        backend.Lease
	r        *renewer
	stepDown *time.Timer   // fires at the lease's deadline minus SafetyMargin; re-armed if the Deadline moved meanwhile
	running  chan struct{} // closed when OnElected returns; nil once seen
	late     bool          // OnElected was not called (see lead); set before running closes
	stepDone bool          // stepDown has fired
	resign   *resignRequest
}

func (t *term) stepDownAt() time.Time { return t.l.Deadline().Add(-t.e.opts.SafetyMargin) }

// lead runs one term on lease l: OnElected, renewals, step-down, and the end
// of the term (drain OnElected, release, OnRevoked). It reports whether the
// term ended by resignation.
func (e *Elector) lead(ctx context.Context, l backend.Lease) (resigned bool) {
	o := &e.opts
	ts := &termState{
		term:  Term{Election: e.election, Identity: o.Identity, Token: l.Token(), Start: time.Now()},
		lease: l,
		ended: make(chan struct{}),
	}
	tctx, cancelTerm := context.WithCancelCause(context.WithValue(ctx, termKey{}, ts))
	defer cancelTerm(nil)
	e.mu.Lock()
	e.term = ts
	e.mu.Unlock()
	e.observe(Event{Kind: EventElected, Term: ts.term})
	e.log.LogAttrs(ctx, slog.LevelInfo, "elected",
		slog.Uint64("token", ts.term.Token), slog.Duration("deadline_in", time.Until(l.Deadline())))

	r := &renewer{e: e, l: l, term: ts.term, proved: ts.term.Start}
	if tl, ok := l.(backend.TrailingLease); ok {
		r.trails = tl.DeadlineTrails()
	}
	r.timer = time.NewTimer(r.next())
	callback := make(chan struct{}) // closed when OnElected returns
	t := &term{e: e, ts: ts, l: l, running: callback, r: r}
	deadline := l.Deadline() // as won; read here, not behind a renewal holding the lease
	go func() {
		defer close(callback)
		if e.beforeElected != nil {
			e.beforeElected()
		}
		// The process may have stopped between the win and now (SIGSTOP, a
		// paused VM, a long GC pause) for longer than the lease lasts:
		// OnElected would then start while another candidate may lead (a
		// partition owner did so in the partition chaos on ZooKeeper, 2 ms
		// after it resumed from 3.5 s). Checked here, the window is the
		// moment between this check and OnElected's first action; the
		// fencing token covers that.
		switch {
		case time.Until(deadline) <= o.SafetyMargin:
			t.late = true
		case o.OnElected != nil:
			o.OnElected(tctx, ts.term)
		}
	}()
	t.stepDown = time.NewTimer(time.Until(t.stepDownAt()))
	defer t.stepDown.Stop()
	defer t.r.stop()

	reason := t.serve(ctx)

	// The term has ended: stop acting as leader.
	e.mu.Lock()
	ts.endedAt = time.Now()
	e.mu.Unlock()
	close(ts.ended)
	cancelTerm(reason)
	e.observe(Event{Kind: EventEnded, Term: ts.term, Err: reason})
	level := slog.LevelInfo
	if errors.Is(reason, ErrLeaseLost) {
		level = slog.LevelWarn
	}
	e.log.LogAttrs(ctx, level, "term ended", slog.Uint64("token", ts.term.Token), slog.Any("reason", reason))

	t.drain(ctx)
	t.r.stop()

	relErr := e.release(ctx, l, ts.term)
	e.mu.Lock()
	e.term = nil
	e.mu.Unlock()
	e.log.LogAttrs(ctx, slog.LevelInfo, "revoked", slog.Uint64("token", ts.term.Token), slog.Any("reason", reason))
	e.observe(Event{Kind: EventRevoked, Term: ts.term, Err: reason})
	if o.OnRevoked != nil && !t.late {
		o.OnRevoked(ts.term, reason)
	}
	if t.resign != nil {
		t.resign.reply <- relErr
	}
	return t.resign != nil
}

// serve leads until the term ends, renewing the lease, and returns why it
// ended: ctx ended, the lease was lost or could not be renewed before the
// step-down point, or Resign was called (t.resign is then set).
func (t *term) serve(ctx context.Context) (reason error) {
	e, r := t.e, t.r
	for reason == nil {
		select {
		case <-ctx.Done():
			reason = ctx.Err()
		case <-t.l.Lost():
			reason = fmt.Errorf("%w: the backend reports it gone: %w", ErrLeaseLost, backend.ErrLost)
		case <-t.stepDown.C:
			if d := time.Until(t.stepDownAt()); d > 0 {
				t.stepDown.Reset(d) // the driver moved the Deadline between renewals
				continue
			}
			t.stepDone = true
			reason = fmt.Errorf("%w: %w (%s)", ErrLeaseLost, errNoRenewal, r.why())
		case req := <-e.resignCh:
			if req.ts != t.ts {
				req.reply <- ErrNotLeader
				continue
			}
			reason, t.resign = ErrResigned, req
		case <-r.timer.C:
			r.fire(ctx, t.stepDownAt())
		case err := <-r.result:
			switch lost := r.done(ctx, err); {
			case lost != nil:
				reason = fmt.Errorf("%w: renew: %w", ErrLeaseLost, lost)
			case err == nil:
				t.stepDown.Reset(time.Until(t.stepDownAt()))
			}
		case <-t.running:
			t.running = nil
			if t.late {
				reason = fmt.Errorf("%w: the step-down point passed before OnElected could start", ErrLeaseLost)
				continue
			}
			e.log.LogAttrs(ctx, slog.LevelInfo, "OnElected returned; still leading until the term ends",
				slog.Uint64("token", t.ts.term.Token))
		}
	}
	return reason
}

// drain waits for OnElected to return after the term ended. After a
// voluntary end (Resign, Run's ctx) it keeps the lease renewed meanwhile,
// so that no successor is elected while OnElected still acts.
func (t *term) drain(ctx context.Context) {
	r := t.r
	voluntary := t.resign != nil || ctx.Err() != nil
	for t.running != nil {
		select {
		case <-t.running:
			t.running = nil
		case <-r.timer.C:
			if voluntary && !t.stepDone {
				r.fire(ctx, t.stepDownAt())
			}
		case err := <-r.result:
			switch lost := r.done(ctx, err); {
			case lost != nil:
				voluntary = false // gone: nothing left to keep
			case err == nil:
				t.stepDown.Reset(time.Until(t.stepDownAt()))
			}
		case <-t.stepDown.C:
			if d := time.Until(t.stepDownAt()); d > 0 {
				t.stepDown.Reset(d)
				continue
			}
			t.stepDone = true
		}
	}
}

func isNoLeader(err error) bool { return errors.Is(err, backend.ErrNoLeader) }
