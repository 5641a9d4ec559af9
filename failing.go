package elector

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// warnRepeat is the shortest time between two warnings about one run of
// failures, whatever the TTL.
const warnRepeat = 5 * time.Second

// streak is a run of failed campaign attempts, as [Elector.Check] and the
// logs report it. Guarded by Elector.mu.
type streak struct {
	since    time.Time // first failure of the run; zero when the last attempt did not fail
	last     error     // the last failure
	failures int       // failures in the run
	inFlight time.Time // when the attempt in flight began; zero between attempts
	warned   time.Time // when the run was last logged at Warn
}

// warnEvery is the time between two warnings about one run of failures:
// the first failure is logged at Warn, then one failure per TTL (at least
// warnRepeat apart); the others at Debug.
func (e *Elector) warnEvery() time.Duration { return max(e.opts.TTL, warnRepeat) }

// attemptBegins records the start of a campaign attempt.
func (e *Elector) attemptBegins(now time.Time) {
	e.mu.Lock()
	e.failing.inFlight = now
	e.mu.Unlock()
}

// attemptWon records a campaign attempt that won, and says so if it ends a
// run of failures.
func (e *Elector) attemptWon(ctx context.Context) {
	e.mu.Lock()
	f := e.failing
	e.failing = streak{}
	e.mu.Unlock()
	if !f.since.IsZero() {
		e.log.LogAttrs(ctx, slog.LevelInfo, "campaigning works again",
			slog.Duration("failed_for", time.Since(f.since).Round(time.Millisecond)), slog.Int("failures", f.failures))
	}
}

// attemptFailed records a failed campaign attempt and logs it: at Warn for
// the first failure of a run and then once per warnEvery, at Debug
// otherwise, with how long campaigning has been failing.
func (e *Elector) attemptFailed(ctx context.Context, err error, retryIn time.Duration) {
	now := time.Now()
	e.mu.Lock()
	f := &e.failing
	f.inFlight = time.Time{}
	if f.since.IsZero() {
		f.since = now
	}
	f.last = err
	f.failures++
	level := slog.LevelDebug
	if f.warned.IsZero() || now.Sub(f.warned) >= e.warnEvery() {
		level, f.warned = slog.LevelWarn, now
	}
	since, failures := f.since, f.failures
	e.mu.Unlock()
	e.log.LogAttrs(ctx, level, "campaign failed; retrying", slog.Any("error", err),
		slog.Duration("failing_for", now.Sub(since).Round(time.Millisecond)),
		slog.Int("failures", failures), slog.Duration("retry_in", retryIn))
}

// attemptEnded records the end of a campaign attempt that neither won nor
// failed (its ctx ended).
func (e *Elector) attemptEnded() {
	e.mu.Lock()
	e.failing.inFlight = time.Time{}
	e.mu.Unlock()
}

// attemptsForgotten forgets the run of failures when Run returns.
func (e *Elector) attemptsForgotten() {
	e.mu.Lock()
	e.failing = streak{}
	e.mu.Unlock()
}

// checkCampaign is [Elector.Check] between terms: an error once every
// campaign attempt has failed for longer than TTL. An attempt in flight for
// longer than TTL is taken to be waiting behind a leader, which is healthy:
// drivers return a failure to reach their store well within a TTL. Called
// with e.mu held.
func (e *Elector) checkCampaign(now time.Time) error {
	f := e.failing
	if f.since.IsZero() || (!f.inFlight.IsZero() && now.Sub(f.inFlight) > e.opts.TTL) {
		return nil
	}
	if d := now.Sub(f.since); d > e.opts.TTL {
		return fmt.Errorf("elector: campaigning has failed for %v (%d attempts, longer than the TTL %v); last error: %w",
			d.Round(time.Millisecond), f.failures, e.opts.TTL, f.last)
	}
	return nil
}
