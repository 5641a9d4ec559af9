// Package kube is the Kubernetes driver of elector: leader elections stored
// in coordination.k8s.io/v1 Lease objects, interoperable with client-go's
// tools/leaderelection (LeaseLock) on the same Lease.
//
//	cfg, _ := rest.InClusterConfig()
//	cli, _ := coordinationv1client.NewForConfig(cfg)
//	b, _ := kube.New(cli, "my-namespace", nil)
//	e, _ := elector.New(b, "my-controller", &elector.Options{TTL: 15 * time.Second, OnElected: lead})
//
// The client carries the server, credentials and rate limit. The package
// is a module of its own, so programs that do not use Kubernetes never
// download client-go. Derivations:
// https://github.com/leaderkit/elector/blob/main/docs/design/kube.md.
//
// # URLs
//
// Importing the package registers kube:// with package backendurl, which
// states the shared rules:
//
//	kube://host[:port]?token_file=PATH&ca=PATH[&namespace=NS]...
//	kube://[?kubeconfig=PATH][&context=NAME][&namespace=NS]...
//
// With a host: https://host:port (port 6443), the bearer token in
// token_file and/or the client certificate cert and key, verified with ca,
// server_name, insecure_skip_verify. Without one, as kubectl: the
// kubeconfig and its context, or in a pod the service account.
// Other parameters: namespace (default the context's, in a pod the pod's,
// else "default"); qps and burst, the client's rate limit (default 50 and
// 100); drift_factor, cleanup_timeout, request_timeout, elector_only, the
// fields of [Options]. For example, in a pod: kube://?namespace=billing
//
// # Layout
//
// An election is one Lease in the Backend's namespace, named by
// [LeaseName] (a valid Lease name is used as is, so election "my-controller"
// is client-go's LeaseLock "my-controller"). The driver writes client-go's
// record (holderIdentity, leaseDurationSeconds: the TTL in whole seconds,
// acquireTime, renewTime, leaseTransitions) plus [HolderAnnotation], and
// releases as client-go's ReleaseOnCancel does; it deletes a Lease only in
// [Backend.Forget]. So client-go and elector candidates share one election
// both ways; give every candidate a distinct identity.
//
// # Fencing
//
// The token of a term is the Lease's leaseTransitions after the driver
// incremented it on acquisition. client-go increments it on every change
// of holder, nobody lowers it, and every write is conditional on the
// resourceVersion read, so tokens strictly increase across terms, also
// with client-go holders. Deleting the Lease resets the count: never
// delete the Lease of an election whose tokens a resource checks.
//
// # Timing
//
// A waiting Campaign reads the Lease from the Backend's one watch of its
// namespace's Leases (listed once, then resumed from the last version seen,
// as a client-go informer does): a graceful hand-over takes one watch event
// and one update. A holder that stops without releasing is taken over when
// its Lease expires as client-go judges it: leaseDurationSeconds after the
// Backend's watch first saw the record as it is now, or earlier on the
// apiserver's clock for a candidate that started later (section Readers).
// Deadline is the
// send time of an update plus the TTL less the drift allowance
// ([backend.LeaseDeadline]), counted by default from the first update of
// the current second of renewTime, since client-go compares records at
// whole seconds: hence TTLs from [MinTTL] (3 s), or from 1 s with
// [Options.ElectorOnly] (no client-go candidate).
//
// Renew is one conditional update, failing with [backend.ErrLost] only
// when the Lease no longer names the lease; the same watch follows held
// leases, so another party's write ends a lease at once. Leader, Leaders
// and Watch report a holder gone once its Lease has expired (section
// Readers). Requests are bounded by [Options.RequestTimeout] (3 s) and
// pass the client's rate limiter. A held election costs one update per
// renewal; waiting Campaigns, Watches and [Backend.Leaders] cost none while
// the watch runs, so an apiserver restart costs a Backend one watch
// request. A Backend admits campaigns while its renewals stay within 90% of
// the client's qps (about qps × the renewal interval elections); further
// ones wait, and [Backend.Warnings] says so once, naming qps and burst.
// A [RateLimiter] (kube:// URLs use one) sends renewals first. While the
// apiserver does not answer (connection refused or lost, as during its
// restart), a Backend sends one request every 50 ms and fails the others
// at once, so retries neither fill the rate limiter nor meet the apiserver
// all together when it is back.
//
// # Safety
//
// Mutual exclusion rests on the apiserver's optimistic concurrency (every
// take-over, renewal and release is conditional on the resourceVersion
// read) and on clocks: no candidate compares its clock with another's or
// with a time the holder stored in the Lease (renewTime). A candidate
// takes a Lease over once either judgment says the holder stopped: the
// holder's duration watched on its own clock, as client-go candidates
// judge, which assumes its clock does not run faster than the holder's
// monotonic clock by more than DriftFactor over one duration; or the
// apiserver's clock (section Readers), which assumes too that the
// apiservers' clocks agree within a second and do not step by more than
// that within a lease. A process paused past its Deadline may still
// believe it leads: fence writes with the token.
//
// # Errors
//
// Invalid names, identities, TTLs and options, and requests the apiserver
// refuses as invalid, wrap [backend.ErrInvalid]; calls after Close wrap
// [backend.ErrClosed]; a lease known to be gone wraps [backend.ErrLost];
// Leader of an election whose Lease names no holder wraps
// [backend.ErrNoLeader]; in a namespace that does not exist, the error
// names it. Context errors are returned unwrapped; others are transient.
//
// # Readers
//
// Leader, Leaders and Watch (so elect status, run --once and partitions)
// tell a crashed holder from a live one at once, on the apiserver's clock:
// the holder stops within its duration of its last write, which the
// apiserver stamps in managedFields; once the Date of an answer is past
// that stamp plus the duration, two seconds of rounding and skew and the
// drift allowance, the holder had stopped. This assumes the apiservers'
// clocks agree within a second; renewTime is never trusted. Without
// managedFields, readers wait the duration from their first read. A
// Campaign judges the same way, so a process that starts after a holder
// crashed (a cron firing of elect run --once) takes the Lease over about
// two seconds after the holder's duration has passed since its last write,
// without watching it for a duration first (section Safety).
//
// # Candidates
//
// The Backend is a [backend.Registry], so candidates may campaign with a
// priority (elector.Options.Priority). Each entry is one LeaseCandidate
// (coordination.k8s.io/v1beta1, KEP-4355) in the Backend's namespace: named
// after the election's Lease and a random ID, spec.leaseName the Lease's
// name, [ElectionLabel] to list an election's entries, the entry in
// [CandidateAnnotation] and its TTL in [TTLAnnotation], spec.renewTime
// moved by each refresh. An entry is live until its TTL after its last
// write, judged on the apiserver's clock as a holder is (section Readers).
// Withdraw and Close delete it. The apiserver must serve the API: it needs
// --runtime-config=coordination.k8s.io/v1beta1=true and
// --feature-gates=CoordinatedLeaderElection=true; without them Register
// fails with an error wrapping [backend.ErrInvalid] that says so. The
// client's Role must allow create, get, list, watch, patch and delete on
// coordination.k8s.io leasecandidates (a refusal is transient). Entries
// carry strategy [CandidateStrategy] and no emulationVersion, so
// Kubernetes' Coordinated Leader Election never elects one; but where the
// apiserver runs it, its controller sees them, and while the election's
// Lease is free it creates the Lease without a holder, or writes
// spec.strategy onto it. Such a Lease is free to elector and client-go
// candidates alike.
//
// # Coordinated Leader Election
//
// When the apiserver's Coordinated Leader Election (KEP-4355) prefers a
// client-go candidate (a LeaseCandidate of its own, a LeaderElector with
// Coordinated) to an elector leader, it names it in the Lease's
// spec.preferredHolder. The leader's lease then asks to yield
// ([backend.Yielder]): the Elector ends the term with a reason wrapping
// elector.ErrPreempted and releases the Lease once OnElected has returned,
// so the controller makes the preferred candidate holder at once, where a
// client-go holder stops renewing and leaves the election without a leader
// until its Lease expires. A Campaign leaves a free Lease that names
// another preferred holder to it for the candidate's TTL. The controller
// makes a holder without incrementing leaseTransitions, so the client-go
// holder after such a hand-over has the count of the elector term before
// it; elector tokens still rise from term to term, but only elector
// holders carry one (section Fencing).
//
// # Migrating
//
// A controller moves off client-go's LeaderElector by a rolling update
// (docs/migration.md): keep the Lease (election = LeaseLock name, TTL =
// LeaseDuration), run client-go with ReleaseOnCancel, use distinct
// identities, replace replicas one at a time, and fence with the token once
// no client-go replica runs. [Backend.Mark] implements migrate.Marker, so
// package migrate moves an election from Leases to another store.
package kube
