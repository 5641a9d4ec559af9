// Package kube is the Kubernetes driver of elector: leader elections stored
// in coordination.k8s.io/v1 Lease objects, interoperable with client-go's
// tools/leaderelection (LeaseLock) on the same Lease.
//
//	cfg, _ := rest.InClusterConfig()
//	cli, _ := coordinationv1client.NewForConfig(cfg)
//	b, _ := kube.New(cli, "my-namespace", nil)
//	e, _ := elector.New(b, "my-controller", &elector.Options{TTL: 15 * time.Second, OnElected: lead})
//
// The server, credentials and client-side rate limit are configured on the
// client; the driver only uses it. The package is a module of its own
// (github.com/leaderkit/elector/kube), so that programs that do not use
// Kubernetes never download or compile client-go. Importing it registers the
// kube:// scheme with package backendurl.
//
// # URLs
//
// Importing the package registers the kube:// scheme with package
// backendurl (the rules every scheme shares are in its documentation). The
// forms:
//
//	kube://host[:port]?token_file=PATH&ca=PATH[&namespace=NS]...
//	kube://[?kubeconfig=PATH][&context=NAME][&namespace=NS]...
//
// With a host, the client reaches https://host:port (port 6443 by
// default), authenticating with the bearer token read from token_file (read
// again as it changes) and/or the client certificate cert and key, and
// verifying the server with ca (or the system roots), server_name and
// insecure_skip_verify. Without a host, the client is configured as
// kubectl would be: from the kubeconfig file (default: $KUBECONFIG, then
// ~/.kube/config) and its context (default: the current one), or from the
// pod's service account when the process runs in a cluster and finds no
// kubeconfig. Parameters:
//
//   - namespace: the Leases' namespace (default: the context's, in a pod
//     the pod's, else "default");
//   - qps, burst: the client's rate limit (default 50 and 100, above
//     client-go's 5 and 10, which would throttle many elections). Every
//     request passes it, one update per held election per renewal, so
//     qps bounds the elections one Backend keeps renewed: about qps × the
//     renewal interval (TTL/3 under package elector). [Backend.RequestRate]
//     reports it, and elect compare holds no more than that;
//   - drift_factor, cleanup_timeout, request_timeout, elector_only: the
//     fields of [Options] of those names.
//
// For example, a controller in a pod:
//
//	kube://?namespace=billing
//
// # Lease layout
//
// An election is one Lease in the Backend's namespace, named by
// [LeaseName]: an election name that is a valid Lease name is used as it
// is, so election "my-controller" and a client-go LeaseLock named
// "my-controller" are the same election. The driver writes the record
// client-go writes:
//
//   - holderIdentity: the candidate's identity ("" once released);
//   - leaseDurationSeconds: the TTL, rounded up to whole seconds (at least
//     [MinTTL] unless [Options.ElectorOnly] is set);
//   - acquireTime: when this holder took the Lease (MicroTime), kept by
//     renewals; renewTime: the time of every update;
//   - leaseTransitions: incremented on every acquisition (see # Fencing);
//
// and the annotation [HolderAnnotation], a random value per lease, that
// tells two elector candidates of the same identity apart. A release
// writes what client-go's ReleaseOnCancel writes: no holder, a duration of
// one second, the transitions count kept. The driver deletes a Lease only
// when asked to forget its election ([Backend.Forget], which elect compare
// calls for the throw-away elections of its run).
//
// So a client-go LeaderElector and elector candidates share one election
// in both directions: each waits while the other holds the Lease, and takes
// it at once when the other releases it, or when it expires. Give every
// candidate a distinct identity, as client-go requires: a client-go
// candidate takes a Lease whose holderIdentity is its own identity for its
// own and renews it.
//
// # Fencing
//
// The token of a term is the Lease's leaseTransitions after the driver
// incremented it on acquisition: the driver increments it on every
// acquisition, by any candidate, and client-go increments it on every
// change of holder (leaderelection.go, tryAcquireOrRenew: LeaderTransitions
// = old + 1 unless the holder is itself); neither ever lowers it, and every
// write is conditional on the resourceVersion read, so increments never
// race. Tokens therefore strictly increase across the terms of elector
// candidates, including terms interleaved with client-go holders (a
// client-go holder's term carries the count it wrote, which client-go
// users do not fence with). Deleting the Lease resets the count: never
// delete the Lease of an election whose tokens a resource checks. The count
// is an int32: after 2,147,483,647 acquisitions Campaign returns an error
// wrapping [backend.ErrInvalid].
//
// # Timing
//
// A waiting Campaign reads the Lease and then watches it (one watch per
// waiting Campaign, never polling): a release, a deletion or a new holder
// is seen as soon as the apiserver sends the event, so a graceful hand-over
// takes one watch event and one update. A holder that stops without
// releasing is taken over when its Lease expires, as client-go judges it:
// leaseDurationSeconds of the holder after the waiting candidate first saw
// the record as it is now. A candidate that starts while the Lease is held
// therefore waits a full duration from its first read, even if the holder
// stopped long ago: a Lease carries no time a candidate could trust without
// trusting the holder's clock.
//
// Deadline is the send time of an update plus the TTL less the drift
// allowance ([Options.DriftFactor], [backend.LeaseDeadline]) — but not of
// every update. client-go's LeaderElector restarts a holder's expiry only
// when the record it reads differs from the last one it read, and it
// compares the record as JSON, in which acquireTime and renewTime are whole
// seconds (metav1.Time): renewals within one second of renewTime look the
// same to it, and it counts the holder's duration from when it first saw
// the first of them. So by default the Deadline counts from the send time
// of the first update of the current second of renewTime (or of an
// earlier renewal whose outcome is unknown, which may have written that
// record first), and a lease
// survives on regular renewals only if it outlasts a second plus a renewal
// interval and the portable layer's safety margin: the driver refuses TTLs
// below [MinTTL] (3 s). With [Options.ElectorOnly] (no client-go candidate
// on the Backend's Leases) it counts from every update, and TTLs from 1 s
// are accepted: elector candidates compare records to the microsecond.
//
// Renew is one update conditional on the
// resourceVersion the lease last wrote; a conflict is read back, and only a
// Lease that no longer names this lease (another holder, a release, a
// deletion) makes Renew return an error wrapping [backend.ErrLost]. A
// Backend that holds leases also keeps one watch of its namespace's Leases
// (from the version of the write that won its first lease, resumed from
// the last version it saw; it lists them only when the apiserver can no
// longer resume it, after a long outage): a lease's Lost is closed as soon
// as the apiserver sends an event of a write, after the one that won it,
// that does not name it (a client-go candidate or kubectl took it,
// released it for it, or deleted it), not at the next renewal; and on
// Release and Close. A waiting candidate that conforms never writes a Lease it does
// not hold before it expires, so the watch catches writers that do not.
//
// Leader, Leaders and Watch report a holder as gone once its Lease has
// expired (see # Readers), although the Lease names it until another
// candidate takes it over: a crashed holder drops out of their answers
// about its duration after its last write, as a key with a TTL does in the
// other stores, which package partition's membership relies on.
//
// Every request is bounded by [Options.RequestTimeout] (3 s by default).
// Requests pass the client's rate limiter: client-go's default (QPS 5,
// burst 10) is enough for a few elections renewed every few seconds; a
// process that holds many elections, or hands them over often, should raise
// it on its rest.Config. Each held election costs one update per renewal,
// each waiting candidate one watch; a Backend holding any election keeps
// one more watch, of every Lease of its namespace. [Backend.Leaders] reads
// many elections with one List (package partition reads its members and
// its partitions' holders so). A member of a partition group needs about
// 1.5 × its partitions / TTL in seconds requests per second for its
// renewals, plus its membership: the 64 partitions of a 3-member group at
// TTL 2 s cost each member about 47 requests/s, nearly the default qps of
// a kube:// URL; raise qps for larger shares or shorter TTLs. Recovery
// needs more: every waiting candidate keeps a watch of its own, so after
// an apiserver restart each reads its Lease and watches it again at once,
// in the same rate limit as the renewals. At qps 50 a 64-partition group
// of 5 members at TTL 2 s stayed safe under faults of the apiserver and
// its etcd but left partitions without an owner for up to minutes
// (docs/chaos.md); give a partition group several times its steady rate.
//
// # Errors
//
// Invalid names, identities, TTLs (below [MinTTL], or below 1 s with
// [Options.ElectorOnly]) and options wrap [backend.ErrInvalid], as
// do requests the apiserver refuses as invalid; calls after Close wrap
// [backend.ErrClosed]; a lease known to be gone wraps [backend.ErrLost];
// Leader of an election whose Lease names no holder wraps
// [backend.ErrNoLeader]. Context errors are returned unwrapped. Every other
// error (an unreachable apiserver, missing rights, a namespace that does
// not exist) is transient. A Campaign whose take-over request fails in a
// way that may have been applied (a lost answer, a storage timeout) clears
// the Lease in the background if it names this candidate, so it does not
// hold the election up.
//
// # Safety
//
// Mutual exclusion rests on the apiserver's optimistic concurrency (every
// take-over, renewal and release is an update conditional on the
// resourceVersion read, applied through etcd's linearizable writes) and on
// clock rate, not clock agreement: no candidate compares its clock with
// another's or with a time stored in the Lease. A waiting candidate counts
// the holder's duration from when it first saw the holder's latest record
// (as it compares records: client-go at whole seconds, this driver to the
// microsecond), which is no earlier than when the holder sent the first
// update that produced that record; the holder stops at its Deadline,
// counted from that send time (see # Timing). A waiting candidate takes
// the Lease over only with an update conditional on the version it read,
// so it cannot act on a record older than the holder's latest. So the
// holder stops first provided the waiting candidate's clock does not run
// faster than the holder's monotonic clock by more than DriftFactor over
// one duration; client-go candidates judge expiry the same way.
// Clocks set to different times (a wall clock step, a skewed node) do not
// matter; renewTime and acquireTime are reports, not used for exclusion.
//
// A process paused past its Deadline may still believe it leads: fence
// writes with the token.
//
// # Readers
//
// A reader (Leader, Leaders, Watch; so elect status, elect run --once and
// a partition reading) must tell a crashed holder from a live one without
// watching the Lease for a duration first. It reports a holder as expired
// when either of two judgments says so. On the apiserver's clock: the
// apiserver stamps every write of a Lease that changes it in
// metadata.managedFields[].time and every answer with a Date header, both
// whole seconds of its own clock; the holder's last write is no later than
// the greatest stamp plus a second, and the holder stops within its
// leaseDurationSeconds of that write (its Deadline counts from the send
// time); so once the apiserver's clock, read from the Date of GET /version
// (at most every 10 s), shows more than that stamp plus a second, the
// duration and a second of skew at the read's send time, the holder had
// stopped when the Lease was read. Or as a waiting candidate judges it: the
// duration after this Backend first read the record. The first judgment
// assumes that the apiservers' clocks (and that of any proxy that writes
// the Date header) are within a second of each other and step by no more
// than that during one lease, and that no clock involved runs faster than
// another by more than DriftFactor; it never trusts renewTime. A Lease
// whose managedFields were cleared, or a client that does not expose its
// *rest.RESTClient, leaves only the second judgment: a process that looks
// once then reports a crashed holder for its full duration. The
// derivation is in docs/design/kube.md in the repository.
//
// Readers only: a Campaign still takes a Lease over only after watching its
// record for the holder's duration (see # Safety), so a candidate that
// starts after a holder crashed waits a duration; elect run --once needs a
// --wait longer than the TTL to take over a crashed holder's Lease.
//
// # Moving from client-go
//
// A controller that elects its leader with client-go's LeaderElector on a
// LeaseLock moves to elector by a rolling update, with no time when two
// replicas lead and none longer than the lease without a leader: the
// runbook is the section "Move from client-go's leader election" of
// docs/migration.md in the repository, and TestRollingUpgradeFromClientGo
// runs it. In short: keep the Lease (elector's election name is the
// LeaseLock's name, the TTL its LeaseDuration), run client-go with
// ReleaseOnCancel, give every replica a distinct identity, replace the
// replicas one at a time, and fence with the token once no client-go
// replica runs.
//
// # Migrating to and from other stores
//
// [Backend.Mark] and [Backend.Unmark] implement migrate.Marker, so package
// github.com/leaderkit/elector/migrate moves an election from Leases to
// another store (etcd, Redis, ZooKeeper) with the runbook of
// docs/migration.md; moving one to Leases needs nothing of the driver. The
// marker is a holder record of identity "migrated-to-<new store>" with the
// largest leaseDurationSeconds (about 68 years) and the token of the last
// term: elector's and client-go's candidates wait behind it.
package kube
