// Package term runs the terms of held leases for the Elector and the
// partition assigner: one engine per Backend owns, for every lease a process
// holds on it, the rules of a held lease, each written once here:
//
//   - the step-down point: a term ends, its ctx cancelled, at the lease's
//     Deadline minus SafetyMargin unless a renewal has moved the Deadline
//     (see [Timing.StepDownAt] and [Timing.PastStepDown]);
//   - the check before a callback starts: a callback whose lease reached its
//     step-down point before it could start (the process was stopped) is not
//     called, and the term ends (see [Term.Go]);
//   - the renewal schedule (see schedule.go): RenewInterval after the proof
//     behind the lease's Deadline, on a process-wide grid for a
//     [backend.TrailingLease], retried with backoff before the step-down
//     point after a failure;
//   - the lost-lease path: a lease whose Lost channel closes, or whose
//     renewal returns [backend.ErrLost], ends its term at once and is
//     renewed no more;
//   - the release bounded by max(RenewInterval, 1 s), on a context that
//     outlives the caller's (see [Release]).
//
// A held term costs no goroutine and no context at rest: one scheduler
// goroutine per Backend keeps the terms' next instants on one timer, and
// renewals run on a few workers that exist only while renewals are queued.
// The engine never calls a lease's methods on its scheduler goroutine, so
// a slow store never delays a step-down. How the scheduler, the workers and
// shared renewals fit together: docs/design/term.md in the repository.
//
// The callback of a term (OnElected, OnAssigned) runs in its own goroutine
// with the term's ctx, one context created when the term starts and
// cancelled by the engine when the term ends: at the step-down point, on
// loss, or when the client ends it ([Term.End]).
package term
