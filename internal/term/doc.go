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
// goroutine per Backend keeps a heap of the terms' next instants (a
// renewal due, a step-down point) on one timer, and a few goroutines watch
// the Lost channels of up to shardSize leases each. A renewal, with one
// context bounded by the step-down point, is queued for a few renewal
// workers that exist only while renewals are queued (see work.go): the
// renewals of a driver that shares its round trips mostly return at once,
// so that a few workers renew thousands of terms, and the workers allowed
// grow, up to maxWorkers, while the queue makes no progress. A lease that
// is a [backend.SinceRenewer] is renewed since the instant the scheduler
// started its renewal, so that renewals started together share its
// driver's request however the workers run them; the renewal of a lease
// whose Deadline trails and that is none, which its driver shares only
// with the renewals that began before its request, runs in a goroutine of
// its own.
// The engine never calls a lease's methods on its scheduler goroutine (a
// driver may hold a lease's lock for a whole renewal round, Deadline
// included): Deadline is read by the renewing goroutines, so that a slow
// store never delays a step-down.
//
// The callback of a term (OnElected, OnAssigned) runs in its own goroutine
// with the term's ctx, one context created when the term starts and
// cancelled by the engine when the term ends: at the step-down point, on
// loss, or when the client ends it ([Term.End]).
package term
