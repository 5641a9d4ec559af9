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
// A waiting Campaign follows the Lease through the Backend's one watch of
// its namespace's Leases (listed once, then resumed as an informer does):
// a graceful hand-over takes one watch event and one update. A holder that
// stops without releasing is taken over when its Lease expires, judged on
// the candidate's own clock as client-go judges it, or earlier on the
// apiserver's clock (section Readers). Deadline is counted from the first
// update of the current second of renewTime, as client-go compares records
// at whole seconds: hence TTLs from [MinTTL] (3 s), or from 1 s with
// [Options.ElectorOnly]. Renew is one conditional update; the same watch
// ends a lease at once when another party writes it. Requests are bounded
// by [Options.RequestTimeout] and pass the client's rate limiter; a
// [RateLimiter] (kube:// URLs use one) sends renewals first, and a Backend
// admits campaigns while its renewals fit within 90% of qps ([Backend.Warnings]).
//
// # Safety
//
// Mutual exclusion rests on the apiserver's optimistic concurrency (every
// take-over, renewal and release is conditional on the resourceVersion
// read) and on clocks: a candidate never compares its clock with another's
// or with renewTime. It takes a Lease over once the holder's duration has
// passed on its own clock, which assumes that clock does not run faster
// than the holder's by more than DriftFactor over one duration, or on the
// apiserver's clock, which assumes the apiservers' clocks agree within a
// second. A process paused past its Deadline may still believe it leads:
// fence writes with the token.
//
// # Errors
//
// Invalid names, identities, TTLs and options, and requests the apiserver
// refuses as invalid, wrap [backend.ErrInvalid]; calls after Close wrap
// [backend.ErrClosed]; a lease known to be gone wraps [backend.ErrLost];
// Leader of a Lease without a holder wraps [backend.ErrNoLeader]; a
// missing namespace is named. Context errors are unwrapped; others are
// transient.
//
// # Readers
//
// Leader, Leaders, Watch and Campaign tell a crashed holder from a live one
// at once, on the apiserver's clock: once the Date of an answer is past the
// holder's last write (stamped by the apiserver in managedFields) plus its
// duration and two seconds, the holder had stopped: elect status and a
// cron firing of elect run --once see a crashed holder gone about two
// seconds after its Lease ran out.
//
// # Candidates
//
// The Backend is a [backend.Registry], so candidates may campaign with a
// priority (elector.Options.Priority). Each entry is one LeaseCandidate
// (coordination.k8s.io/v1beta1) labelled [ElectionLabel], live until its
// TTL after its last write on the apiserver's clock. The apiserver needs
// --runtime-config=coordination.k8s.io/v1beta1=true and
// --feature-gates=CoordinatedLeaderElection=true (without them Register
// fails with [backend.ErrInvalid] saying so), and the Role create, get,
// list, watch, patch and delete on leasecandidates. When Kubernetes'
// Coordinated Leader Election names another candidate in the Lease's
// spec.preferredHolder, the leader yields ([backend.Yielder]): its term
// ends with elector.ErrPreempted and the Lease is released at once, where
// a client-go holder lets it expire. A hand-over made by that controller
// leaves leaseTransitions as it was, so only elector holders carry a
// token.
//
// # Migrating
//
// A controller moves off client-go's LeaderElector by a rolling update on
// the same Lease (docs/migration.md); [Backend.Mark] implements
// migrate.Marker, so package migrate moves an election to another store.
package kube
