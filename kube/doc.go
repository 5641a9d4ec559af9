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
// Kubernetes never download client-go. How expiry is judged without
// trusting clocks, and the request rates a Backend needs, are explained in
// https://github.com/leaderkit/elector/blob/main/docs/design/kube.md.
//
// # URLs
//
// Importing the package registers the kube:// scheme with package
// backendurl (the rules every scheme shares are in its documentation):
//
//	kube://host[:port]?token_file=PATH&ca=PATH[&namespace=NS]...
//	kube://[?kubeconfig=PATH][&context=NAME][&namespace=NS]...
//
// With a host, the client reaches https://host:port (port 6443 by default)
// with the bearer token in token_file (read again as it changes) and/or the
// client certificate cert and key, verifying the server with ca (or the
// system roots), server_name and insecure_skip_verify. Without a host, it
// is configured as kubectl would be: the kubeconfig file (default
// $KUBECONFIG, then ~/.kube/config) and its context (default the current
// one), or in a pod without kubeconfig the pod's service account. Other
// parameters: namespace (default the context's, in a pod the pod's, else
// "default"); qps and burst, the client's rate limit (default 50 and 100);
// drift_factor, cleanup_timeout, request_timeout and elector_only, the
// fields of [Options]. For example, a controller in a pod:
//
//	kube://?namespace=billing
//
// # Layout
//
// An election is one Lease in the Backend's namespace, named by
// [LeaseName]: an election name that is a valid Lease name is used as is,
// so election "my-controller" and a client-go LeaseLock "my-controller" are
// the same election. The driver writes client-go's record: holderIdentity,
// leaseDurationSeconds (the TTL rounded up to whole seconds), acquireTime,
// renewTime and leaseTransitions, plus the annotation [HolderAnnotation]
// that tells two elector candidates of one identity apart. A release
// writes what client-go's ReleaseOnCancel writes. The driver deletes a
// Lease only when asked to ([Backend.Forget]). So client-go and elector
// candidates share one election in both directions; give every candidate a
// distinct identity, as client-go requires.
//
// # Fencing
//
// The token of a term is the Lease's leaseTransitions after the driver
// incremented it on acquisition. client-go increments it on every change
// of holder, nobody lowers it, and every write is conditional on the
// resourceVersion read, so tokens strictly increase across elector terms,
// including terms interleaved with client-go holders. Deleting the Lease
// resets the count: never delete the Lease of an election whose tokens a
// resource checks. After 2,147,483,647 acquisitions (an int32) Campaign
// returns an error wrapping [backend.ErrInvalid].
//
// # Timing
//
// A waiting Campaign reads the Lease and then watches it: a graceful
// hand-over takes one watch event and one update. A holder that stops
// without releasing is taken over when its Lease expires as client-go
// judges it: leaseDurationSeconds after the waiting candidate first saw
// the record as it is now, so a candidate that starts while the Lease is
// held waits a full duration. Deadline is the send time of an update plus
// the TTL less the drift allowance ([Options.DriftFactor],
// [backend.LeaseDeadline]); by default counted from the first update of
// the current second of renewTime, since client-go compares records at
// whole seconds, hence TTLs from [MinTTL] (3 s). With [Options.ElectorOnly]
// (no client-go candidate on the Backend's Leases) it counts from every
// update and TTLs from 1 s are accepted.
//
// Renew is one conditional update; only a Lease that no longer names the
// lease makes it return an error wrapping [backend.ErrLost]. A Backend
// holding leases watches its namespace's Leases, so a write by another
// party (client-go, kubectl) ends the lease at once. Leader and Watch
// report a holder as gone once its Lease has expired as a waiting
// candidate judges it. Every request is bounded by [Options.RequestTimeout]
// (3 s) and passes the client's rate limiter: each held election costs one
// update per renewal, so one Backend keeps about qps × the renewal
// interval elections renewed ([Backend.RequestRate]). A partition group
// needs several times its steady rate to recover quickly from apiserver
// faults; raise qps on the rest.Config or the URL.
//
// # Safety
//
// Mutual exclusion rests on the apiserver's optimistic concurrency (every
// take-over, renewal and release is conditional on the resourceVersion
// read) and on clock rate, not clock agreement: no candidate compares its
// clock with another's or with a time stored in the Lease. The assumption:
// a waiting candidate's clock does not run faster than the holder's
// monotonic clock by more than DriftFactor over one duration. client-go
// candidates judge expiry the same way. A process paused past its Deadline
// may still believe it leads: fence writes with the token.
//
// # Errors
//
// Invalid names, identities, TTLs and options wrap [backend.ErrInvalid],
// as do requests the apiserver refuses as invalid; calls after Close wrap
// [backend.ErrClosed]; a lease known to be gone wraps [backend.ErrLost];
// Leader of an election whose Lease names no holder wraps
// [backend.ErrNoLeader]. Context errors are returned unwrapped. Every other
// error (an unreachable apiserver, missing rights, a namespace that does
// not exist) is transient.
//
// # Migrating
//
// A controller on client-go's LeaderElector moves to elector by a rolling
// update with no two leaders: keep the Lease (the election name is the
// LeaseLock's name, the TTL its LeaseDuration), run client-go with
// ReleaseOnCancel, give every replica a distinct identity, replace the
// replicas one at a time, and fence with the token once no client-go
// replica runs (docs/migration.md, TestRollingUpgradeFromClientGo).
// [Backend.Mark] and [Backend.Unmark] implement migrate.Marker, so package
// migrate moves an election from Leases to another store; the marker is a
// holder "migrated-to-<new store>" with a duration of about 68 years.
package kube
