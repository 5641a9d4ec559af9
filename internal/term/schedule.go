package term

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector/backend"
)

// attempt is a renewal in flight, from when it is queued until it has
// returned.
type attempt struct {
	ctx    context.Context // bounded by the step-down point
	since  time.Time       // when the scheduler started it
	cancel context.CancelFunc
	done   chan struct{} // closed when the attempt has returned, or was abandoned before it began
	// began is set by the worker that runs the attempt, or by Finish
	// abandoning it before any did: whoever sets it closes done.
	began atomic.Bool
}

// renew runs attempt a of t, on a renewal worker (see work.go), unless
// Finish abandoned it before it began: it reads the
// lease's Deadline, renews unless the Deadline shows the renewal not due
// yet, even allowing for coalescing (a driver moved it between renewals)
// and the rule that a renewal comes before the step-down point (see
// Timing.inTime), reads the Deadline again, and records the outcome. A
// [backend.SinceRenewer] is renewed since the instant the scheduler
// started the attempt, so that the renewals it started together share the
// driver's request however the workers run them.
func (t *Term) renew(a *attempt) {
	if !a.began.CompareAndSwap(false, true) {
		return // abandoned by Finish, which closed done
	}
	defer close(a.done)
	defer a.cancel()
	d := t.l.Deadline()
	now := time.Now()
	if due := t.tm.inTime(now, d, t.dueAfter(d).Sub(now)); !t.trails && t.tm.RenewInterval/coalesce < due {
		t.e.recordCheck(t, a, d)
		return
	}
	began := time.Now()
	var err error
	if t.since != nil {
		err = t.since.RenewSince(a.ctx, a.since)
	} else {
		err = t.l.Renew(a.ctx)
	}
	took := time.Since(began)
	t.e.record(t, a, began, took, err, t.l.Deadline())
}

// RetryLevel is the level at which to log the failures-th failure in a row
// of a term's renewals: Warn at the 1st, 2nd, 4th, 8th…, Debug otherwise,
// so that an outage reads as a few lines.
func RetryLevel(failures int) slog.Level {
	if failures&(failures-1) == 0 {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// retryFloor: renewal retries are at least RenewInterval/retryFloor apart.
const retryFloor = 16

// recordCheck records an attempt that found the renewal not due: the
// Deadline moved, so the renewal is due RenewInterval after its proof.
func (e *Engine) recordCheck(t *Term, a *attempt, d time.Time) {
	e.mu.Lock()
	st := &t.st
	if st.attempt == a {
		st.attempt = nil
		if d.After(st.deadline) {
			st.deadline = d
		}
		now := time.Now()
		st.due = now.Add(t.inTime(now, t.dueAfter(st.deadline).Sub(now)))
		e.scheduleLocked(t)
	}
	e.mu.Unlock()
	e.poke()
}

// record records a renewal's outcome, then reports it: on success the next
// renewal is due by next, after a failure after a backoff, and a lease
// found lost ends the term (or, ended already, is renewed no more).
func (e *Engine) record(t *Term, a *attempt, began time.Time, took time.Duration, err error, d time.Time) {
	e.mu.Lock()
	st := &t.st
	if st.attempt != a || st.finished { // abandoned by Finish
		st.attempt = nil
		e.mu.Unlock()
		return
	}
	st.attempt = nil
	if d.After(st.deadline) {
		st.deadline = d // a deadline never moves back
	}
	now := time.Now()
	r := Renewal{Took: took, Err: err, Deadline: st.deadline}
	var lost error
	switch {
	case err == nil:
		st.failed, st.lastErr = 0, nil
		st.proved = began
		st.due = now.Add(t.next(now))
	case errors.Is(err, backend.ErrLost):
		st.due = time.Time{}
		if st.reason == nil {
			lost = fmt.Errorf("%w: renew: %w", ErrLeaseLost, err)
			e.endLocked(t, lost)
		}
		st.keep = false
	default:
		st.failed++
		st.lastErr = err
		// Back off, but never past half the time left before the step-down
		// point, so that a store that recovers in time is retried in time;
		// and never sooner than retryFloor, so that the last stretch before
		// the step-down point costs a few attempts, not one a millisecond.
		left := t.tm.StepDownAt(st.deadline).Sub(now)
		r.RetryIn = max(min(Backoff(st.failed, t.tm.RenewInterval/2), left/2), t.tm.RenewInterval/retryFloor)
		st.due = now.Add(r.RetryIn)
	}
	r.Failures = st.failed
	r.StepDownIn = t.tm.StepDownAt(st.deadline).Sub(now)
	e.scheduleLocked(t)
	e.mu.Unlock()
	if t.h.Renewed != nil {
		t.h.Renewed(r)
	}
	if lost != nil {
		t.ended1(lost, true)
	}
	e.poke()
}

// why says why no renewal has succeeded yet, for a step-down's reason.
// Called with e.mu held.
func (t *Term) why() string {
	st := &t.st
	switch {
	case st.attempt != nil && st.lastErr != nil:
		return fmt.Sprintf("an attempt was still in flight; the one before failed: %v", st.lastErr)
	case st.attempt != nil:
		return "an attempt was still in flight"
	case st.lastErr != nil:
		return fmt.Sprintf("last error: %v", st.lastErr)
	}
	return "no attempt was due"
}

// dueAfter returns when a lease with Deadline d is due for renewal:
// RenewInterval after the request that proved d (its send time, less the
// drift bound, is d less TTL).
func (t *Term) dueAfter(d time.Time) time.Time { return d.Add(t.tm.RenewInterval - t.tm.TTL) }

// next returns how long after now the next renewal is due, once the lease
// was won or renewed: RenewInterval after the proof behind the lease's
// Deadline (see dueAfter) or, when that is less than a quarter of
// RenewInterval away, the next instant of a process-wide grid of that
// quarter (see onGrid). Counting from the Deadline rather than from when
// the attempt returned keeps the schedules of elections whose leases a
// driver renews together (one etcd keepalive, one ZooKeeper session, one
// Redis batch) in step, so that their next renewals find one request to
// share instead of drifting apart by their latencies.
//
// A [backend.TrailingLease] whose Deadline trails is renewed on the
// process-wide grid of RenewInterval instead, at the first instant at least
// an eighth of an interval after its last successful renewal began: once
// per interval (the first within nine eighths of one after the election),
// and at the same instants as the other elections of the process, so that
// those sharing a session share one request. Called with e.mu held, or
// before the term is attached.
//
// Whatever the schedule, the next renewal is due a little before the
// step-down point (see Timing.inTime): a lease whose Deadline lies closer
// than an interval plus the margin (a trailing Deadline, a slow answer) is
// renewed in time to move it rather than given up unrenewed.
func (t *Term) next(now time.Time) time.Duration {
	ri := t.tm.RenewInterval
	if t.trails {
		return t.inTime(now, gridAfter(now, ri, ri/8))
	}
	floor := ri / 4
	if d := t.dueAfter(t.st.deadline).Sub(now); d >= floor {
		return t.inTime(now, d)
	}
	return t.inTime(now, onGrid(now, floor))
}

// inTime returns d, or less when d would start the renewal too close to
// the step-down point of the term's Deadline (see Timing.inTime). Called
// with e.mu held, or before the term is attached.
func (t *Term) inTime(now time.Time, d time.Duration) time.Duration {
	return t.tm.inTime(now, t.st.deadline, d)
}

// inTime returns d, or less when d would start a renewal of a lease with
// the given Deadline later than a quarter of a renewal interval before its
// step-down point (halfway to it, when it is nearer than half an interval),
// so that an attempt, and a retry after a quick failure, come before the
// term must end.
func (tm Timing) inTime(now, deadline time.Time, d time.Duration) time.Duration {
	left := tm.StepDownAt(deadline).Sub(now)
	latest := left - min(tm.RenewInterval/4, left/2)
	return max(min(d, latest), time.Millisecond)
}

// renewGrid is the origin of the grid's instants, shared by every term of
// the process.
var renewGrid = time.Now()

// onGrid returns how long after now the next instant on the process-wide
// grid of the given period is, at least half a period away. Renewals that
// are always due run on it at the floor's rate, so that the elections
// sharing a session renew at the same instants and share one request,
// instead of each renewing on a phase set by its own latencies.
func onGrid(now time.Time, period time.Duration) time.Duration {
	return gridAfter(now, period, period/2)
}

// gridAfter returns how long after now the next instant on the
// process-wide grid of the given period is that is at least least away.
func gridAfter(now time.Time, period, least time.Duration) time.Duration {
	phase := (now.Sub(renewGrid)%period + period) % period
	d := period - phase
	if d < least {
		d += period
	}
	return d
}

// Backoff returns a full-jitter exponential delay for a retry: uniform in
// [0, min(limit, 25ms·2^attempt)], and at least 1 ms.
func Backoff(attempt int, limit time.Duration) time.Duration {
	ceil := limit
	if attempt < 20 {
		ceil = min(limit, 25*time.Millisecond<<attempt)
	}
	return max(time.Millisecond, rand.N(ceil+1))
}
