// Package elector elects one leader among the replicas of a service, over
// a choice of stores behind one API, so that the code that runs while
// leading does not change when the store does. Every term carries a
// fencing token, so that a paused or partitioned ex-leader cannot corrupt
// what it used to protect.
//
//	b, _ := etcd.New(cli, nil) // or any driver below
//	e, err := elector.New(b, "send-invoices", &elector.Options{
//		OnElected: func(ctx context.Context, t elector.Term) {
//			// Lead until ctx is done; pass t.Token with every write.
//		},
//		OnRevoked: func(t elector.Term, reason error) { /* clean up */ },
//	})
//	if err != nil { ... }
//	err = e.Run(ctx) // campaigns, leads, campaigns again … until ctx ends
//
// # Drivers
//
// Each driver documents its URLs, on-store layout, fencing, timing and
// safety assumptions: [github.com/leaderkit/elector/redlock] (independent
// Redis masters; rests on timing and persistence assumptions),
// [github.com/leaderkit/elector/etcd] (shared with etcdctl elect),
// [github.com/leaderkit/elector/zookeeper] (shared with Curator's
// LeaderLatch) and [github.com/leaderkit/elector/kube] (Kubernetes Leases,
// shared with client-go; a module of its own). Package backend/memory is
// an in-process driver for tests and examples; package backendurl opens
// any driver from a URL. This package imports no driver, only the standard
// library, package backend and internal helpers.
//
// # Guarantees
//
//   - One term at a time per Elector: [Elector.Run] never starts a term while
//     the previous OnElected still runs.
//   - OnElected runs in its own goroutine with a ctx that is cancelled the
//     moment the term ends, for whatever reason. OnRevoked runs exactly once
//     per OnElected, never without one, after OnElected has returned.
//   - A leader stops before another can be elected: its ctx is cancelled at
//     the lease's local deadline minus [Options.SafetyMargin] unless a renewal
//     has moved the deadline, and at once when the backend reports the lease
//     lost. It does not wait to hear from the backend.
//   - While OnElected finishes after a voluntary end ([Elector.Resign], or
//     Run's ctx ending), the lease is kept renewed, so no successor is
//     elected while it still acts; then the lease is released, so the
//     successor is elected at once rather than after a TTL.
//   - Run keeps campaigning across terms; a lost lease is not fatal.
//
// What no library can promise on its own: that a leader paused (by the
// garbage collector, the scheduler, a VM migration) after its last check
// does nothing once it resumes. That is what fencing is for.
//
// # Fencing
//
// Every [Term] carries a Token. Tokens strictly increase across the terms of
// an election, whichever process holds them. Send the token with every write
// to the protected resource and have the resource refuse a token lower than
// the highest it has accepted: a stale leader's late writes are then refused
// instead of corrupting data. Tokens come from the store: etcd's create
// revision, ZooKeeper's czxid, a Lease's leaseTransitions, and for Redlock
// a counter kept by the quorum, whose assumptions the redlock package
// documents. The etcd and zookeeper drivers offer a Guard that makes a
// write to their store commit only while the term is current; the redlock
// driver a Fence script that refuses stale tokens in Redis.
//
// # Timing
//
// A lease lives [Options.TTL] at the backend without renewal. The leader
// renews every [Options.RenewInterval] (default TTL/3); a failed renewal is
// retried with backoff. Each driver computes a conservative local deadline —
// when the lease may lapse at the backend, from when the successful request
// was sent, the TTL and a clock-drift allowance — and the term ends at that
// deadline minus SafetyMargin (default TTL/5). After a crash, a successor is
// elected about TTL after the crashed leader's last renewal; after a
// resignation or a clean shutdown, at once. Time is measured on Go's
// monotonic clock; wall-clock jumps do not matter, clock rate does (see each
// driver's drift allowance).
//
// The Electors of a process that share a Backend share one scheduler: a held
// election costs no goroutine beyond Run's, and no timer of its own, until a
// renewal is due; a renewal holds a goroutine only while its request is in
// flight, and never delays another term's step-down.
//
// # Preferred leaders
//
// A candidate with [Options.Priority] is preferred over those of a lower
// one. While a live candidate of a higher priority campaigns, the leader,
// once it has led [Options.MinTerm], ends its term with the reason
// [ErrPreempted] and hands over as [Elector.Resign] does: its ctx is
// cancelled, the lease stays renewed until OnElected returns, then it is
// released. Candidates below the highest stand aside (they leave any queue
// and do not campaign), and the leader waits until they have, so that the
// highest is elected next, at once. A preferred leader that resigns is
// succeeded at once too, and takes the election back after the
// successor's MinTerm. Nothing ever takes a lease another
// holds: exclusion and fencing are unchanged. Equal priorities never
// preempt one another.
//
// Candidates and their priorities are kept in the backend's registry (a
// [backend.Registry]; [Elector.Candidates] lists them), whose entries live
// only as long as the store keeps their process's session or refreshes
// alive. A higher candidate that does not win within TTL of the election
// falling free is deferred to no more, nor yielded to again, until it
// registers anew: it costs one hand-over and at most about a TTL without a
// leader. Priority 0, the default, takes no part: such an elector neither
// registers, stands aside nor yields, exactly as without priorities, and
// peers that are not electors are not seen. For the highest candidate to
// be elected next, give every elector of the election a priority.
//
// # Errors
//
// [New] validates its arguments and returns an error naming the field and
// the allowed range. [Elector.Run] returns ctx.Err() unwrapped when its ctx
// ends, and an error wrapping [backend.ErrClosed] or [backend.ErrInvalid]
// when the backend fails permanently; transient backend errors are retried,
// never returned. The reason given to OnRevoked wraps [ErrLeaseLost] (with
// its cause), [ErrResigned], [ErrPreempted], or is Run's ctx error. [ErrNoLeader] is
// [backend.ErrNoLeader].
package elector
