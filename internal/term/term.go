package term

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector/backend"
)

// ErrLeaseLost is the reason a term ended because its lease is gone or could
// no longer be proved valid. The elector package exports it as
// elector.ErrLeaseLost.
var ErrLeaseLost = errors.New("elector: lease lost")

// ErrNoRenewal is the cause of a term that ended because no renewal
// succeeded before the step-down point.
var ErrNoRenewal = errors.New("no renewal succeeded before the lease deadline minus the safety margin")

// Timing is the timing of a term's lease, defaults resolved and validated
// by the client.
type Timing struct {
	TTL           time.Duration
	RenewInterval time.Duration
	SafetyMargin  time.Duration
}

// StepDownAt returns the step-down point of a lease with the given
// Deadline: SafetyMargin before it.
func (tm Timing) StepDownAt(deadline time.Time) time.Time { return deadline.Add(-tm.SafetyMargin) }

// PastStepDown reports whether a lease with the given Deadline has reached
// its step-down point: a lease won so, or a callback about to start so, is
// not acted on, as another candidate may hold the election by the time the
// action would start.
func (tm Timing) PastStepDown(deadline time.Time) bool {
	return !time.Now().Before(tm.StepDownAt(deadline))
}

// releaseBound is how long a release may take: max(RenewInterval, 1 s).
func (tm Timing) releaseBound() time.Duration { return max(tm.RenewInterval, time.Second) }

// Release gives l back with a fresh context bounded by max(RenewInterval,
// 1 s), even when ctx has ended, and returns the driver's outcome.
func Release(ctx context.Context, l backend.Lease, tm Timing) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tm.releaseBound())
	defer cancel()
	return l.Release(rctx)
}

// Renewal is the outcome of one renewal attempt, as [Hooks.Renewed]
// receives it.
type Renewal struct {
	Took       time.Duration
	Err        error         // nil on success
	Failures   int           // consecutive failures, this one included
	RetryIn    time.Duration // after a failure that did not lose the lease: when the next attempt starts
	StepDownIn time.Duration // time left before the step-down point after the attempt
	Deadline   time.Time     // the lease's Deadline after the attempt
}

// Hooks connect a term to its client. The engine calls them without any
// lock held; they must not block (a client that must act hands the event to
// its own goroutine).
type Hooks struct {
	// Callback names the callback in reasons ("OnElected").
	Callback string
	// Renewed, if set, is called after each renewal attempt, from the
	// goroutine that ran it, before the term ends if the attempt lost the
	// lease. Attempts abandoned by [Term.Finish] are not reported.
	Renewed func(Renewal)
	// Ended, if set, is called once when the engine ends the term on its own
	// (lost lease, step-down point, a callback that could not start in
	// time), with the reason; not when the client ends it with [Term.End].
	Ended func(reason error)
	// Returned, if set, is called once the callback has returned, or was
	// not called ([Term.Late]).
	Returned func()
	// Before, if set (by tests), runs in the callback's goroutine before
	// the check of the step-down point: as a process stopped there would.
	Before func()
}

// Term is one held lease run by the engine, from [Start] until
// [Term.Finish].
type Term struct {
	e      *Engine
	l      backend.Lease
	lost   <-chan struct{} // l.Lost(), read once
	tm     Timing
	h      Hooks
	won    time.Time // the Deadline when won
	ctx    context.Context
	cancel context.CancelCauseFunc
	trails bool
	since  backend.SinceRenewer // l, if it is one; nil otherwise

	ended    chan struct{} // closed when the term ends
	returned chan struct{} // closed when the callback has returned
	late     atomic.Bool   // the callback was not called; set before returned closes

	st state // guarded by e.mu
}

// state is what the engine tracks of a term. Guarded by Engine.mu.
type state struct {
	deadline time.Time // the lease's Deadline as last read by a renewal goroutine
	due      time.Time // next renewal; zero for none
	proved   time.Time // when the last successful attempt (or the term) began
	attempt  *attempt  // the renewal in flight, or nil
	failed   int       // consecutive failed renewals
	lastErr  error
	reason   error // why the term ended; nil while it lasts
	keep     bool  // ended, but renewed until the callback returns
	returned bool  // the callback has returned
	finished bool  // Finish was called: the engine forgets the term
	wake     time.Time
	idx      int // index in the engine's heap, -1 when not in it
}

// Start starts running a term on lease l, won with the given Deadline (read
// when the campaign returned; the engine never reads it on its own
// goroutine), on the engine of b. The term's ctx derives from parent; it is
// cancelled when the term ends. The caller has checked that the lease is
// not past its step-down point ([Timing.PastStepDown]).
func Start(b backend.Backend, parent context.Context, l backend.Lease, won time.Time, tm Timing, h Hooks) *Term {
	ctx, cancel := context.WithCancelCause(parent)
	t := &Term{
		l: l, lost: l.Lost(), tm: tm, h: h, won: won, ctx: ctx, cancel: cancel,
		ended: make(chan struct{}), returned: make(chan struct{}),
	}
	if tl, ok := l.(backend.TrailingLease); ok {
		t.trails = tl.DeadlineTrails()
	}
	t.since, _ = l.(backend.SinceRenewer)
	now := time.Now()
	t.st = state{deadline: won, proved: now, idx: -1}
	t.st.due = now.Add(t.next(now))
	attach(b, t)
	return t
}

// Context returns the term's ctx: cancelled when the term ends.
func (t *Term) Context() context.Context { return t.ctx }

// Ended returns a channel closed when the term ends.
func (t *Term) Ended() <-chan struct{} { return t.ended }

// Returned returns a channel closed when the callback has returned (or was
// not called).
func (t *Term) Returned() <-chan struct{} { return t.returned }

// Late reports whether the callback was not called, its lease having
// reached its step-down point before it could start. Valid once Returned is
// closed.
func (t *Term) Late() bool { return t.late.Load() }

// Reason returns why the term ended, or nil while it lasts.
func (t *Term) Reason() error {
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	return t.st.reason
}

// Go runs fn(ctx) in a goroutine of its own with the term's ctx, unless the
// lease has reached its step-down point by the time the goroutine runs (the
// process may have stopped between the win and now, for longer than the
// lease lasts: another candidate may lead). Checked there, the window is the
// moment between the check and fn's first action; the fencing token covers
// that. A callback not called ends the term.
func (t *Term) Go(fn func(ctx context.Context)) {
	go func() {
		defer t.callbackReturned()
		if t.h.Before != nil {
			t.h.Before()
		}
		if t.tm.PastStepDown(t.won) { // as won: Deadline may wait behind a renewal
			t.late.Store(true)
			return
		}
		if fn != nil {
			fn(t.ctx)
		}
	}()
}

// callbackReturned records the return of the callback: a term ended
// voluntarily is renewed no more, and a late one ends.
func (t *Term) callbackReturned() {
	e := t.e
	var reason error
	e.mu.Lock()
	t.st.returned = true
	t.st.keep = false
	if t.late.Load() && t.st.reason == nil {
		reason = fmt.Errorf("%w: the step-down point passed before %s could start", ErrLeaseLost, t.h.Callback)
		e.endLocked(t, reason)
	}
	e.scheduleLocked(t)
	e.mu.Unlock()
	close(t.returned)
	if reason != nil {
		t.ended1(reason, true)
	}
	if t.h.Returned != nil {
		t.h.Returned()
	}
	e.poke()
}

// End ends the term with reason, unless it has ended already, and returns
// the reason it ended with. A term ended so, unless reason wraps
// ErrLeaseLost, stays renewed until its callback returns, so that no
// successor is elected while the callback still acts.
func (t *Term) End(reason error) error {
	e := t.e
	e.mu.Lock()
	if r := t.st.reason; r != nil {
		e.mu.Unlock()
		return r
	}
	e.endLocked(t, reason)
	t.st.keep = !t.st.returned && !errors.Is(reason, ErrLeaseLost)
	e.scheduleLocked(t)
	e.mu.Unlock()
	t.ended1(reason, false)
	e.poke()
	return reason
}

// ended1 does what follows the end of the term outside the engine's lock:
// the ctx is cancelled, Ended closes, and the client hears of an end the
// engine decided.
func (t *Term) ended1(reason error, byEngine bool) {
	t.cancel(reason)
	close(t.ended)
	if byEngine && t.h.Ended != nil {
		t.h.Ended(reason)
	}
}

// Finish makes the engine forget the term: no renewal starts any more, and
// one in flight is abandoned and waited for. The Finish of the last term of
// the engine returns once the engine's goroutines have stopped, unless a
// term starts meanwhile. Call it once the term has
// ended and its callback returned, before releasing the lease.
func (t *Term) Finish() {
	e := t.e
	e.mu.Lock()
	if t.st.finished {
		e.mu.Unlock()
		return
	}
	t.st.finished = true
	e.scheduleLocked(t)
	e.loss.unwatchLocked(t)
	e.n--
	a := t.st.attempt
	idle := e.idleLocked()
	e.mu.Unlock()
	t.cancel(nil) // a term finished before it ended frees its ctx all the same
	e.poke()
	if a != nil {
		a.cancel()
		if a.began.CompareAndSwap(false, true) {
			close(a.done) // still queued: no worker will run it
		}
		<-a.done
	}
	if idle != nil {
		<-idle // the last term: no goroutine of the engine outlives it
	}
}

// Release finishes the term and releases its lease (see [Release]).
func (t *Term) Release(ctx context.Context) error {
	t.Finish()
	return Release(ctx, t.l, t.tm)
}
