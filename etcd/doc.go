// Package etcd is the etcd driver of elector: leader elections stored in an
// etcd v3 cluster, wire-compatible with the elections of etcd's own
// go.etcd.io/etcd/client/v3/concurrency package and of `etcdctl elect`.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
//	b, _ := etcd.New(cli, nil)
//	e, _ := elector.New(b, "send-invoices", &elector.Options{TTL: 5 * time.Second, OnElected: lead})
//
// Endpoints, TLS and username/password are configured on the client; the
// driver only uses it. How leases are shared and verified, and the guard
// against etcd releases that revoke leases early, are explained in
// https://github.com/leaderkit/elector/blob/main/docs/design/etcd.md.
//
// # URLs
//
// Importing this package registers etcd and etcds (TLS) with package
// backendurl, which states the shared rules:
//
//	etcd://[user:password@]host:port[,host:port...][?params]
//
// The hosts are the endpoints of one cluster; the port defaults to 2379; a
// URL has no path. Parameters: prefix (Options.Prefix, default "", etcd's
// own layout), request_timeout (Options.RequestTimeout, default 3s),
// cleanup_timeout (Options.CleanupTimeout, default 2s), drift_factor
// (Options.DriftFactor, default 0.01), dial_timeout (the client's
// DialTimeout, default 5s). For example:
//
//	etcds://elect:secret@10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379?prefix=/billing/&ca=/etc/elect/ca.pem
//
// # Layout
//
// A candidate in election E writes the key <Options.Prefix>E/<etcd lease
// ID in lowercase hex>, its identity as the value, attached to an etcd
// lease; the leader is the key with the lowest create revision, and each
// waiting candidate watches only its predecessor. This is the layout of
// concurrency.NewElection and `etcdctl elect`: with the default empty
// Prefix their candidates and this driver's queue in one line, both ways.
// Unlike upstream, names that prefix one another ("jobs", "jobs/eu") are
// distinct (upstream counts "jobs/eu" keys as candidates of "jobs": keep
// such names apart when mixing clients); a Campaign whose key or lease
// disappears returns an error wrapping [backend.ErrLost]
// (etcd-io/etcd#19597), one whose ctx ends deletes its key
// (etcd-io/etcd#21128), and a failed Release gives the lease up anyway.
//
// All candidates of one [Backend] with the same TTL share one etcd lease,
// kept alive by the Renew calls of the leases it carries and by waiting
// Campaigns, not in the background: a lease nobody renews lapses at the
// server, as a crashed process's would. Close revokes the Backend's etcd
// leases, so successors are elected at once.
//
// The registry of candidates with a priority ([backend.Registry], for
// preferred leaders) keeps one key per candidate,
// <Options.Prefix>../candidates/E/<lease hex>, on an etcd lease of its own
// that Close revokes; no election's keys lie under it, so etcdctl and the
// concurrency package never read an entry as a candidate.
//
// # Fencing
//
// The token of a term is the create revision of its candidate key:
// cluster-wide and strictly increasing. [Backend.Guard] turns a term into
// a clientv3.Cmp for the If of a transaction that commits only while the
// term is current at the store. Resources outside etcd should refuse
// tokens lower than the highest they have seen.
//
// # Timing
//
// etcd leases are whole seconds: a TTL is rounded up. A TTL under one
// second, or one the cluster would raise (it grants no lease shorter than
// ceil(1.5 × its election timeout), 2 s by default), is refused. Deadline
// is the send time of the newest trusted keepalive acknowledgement (or of
// the grant) plus the granted TTL less the drift allowance
// ([Options.DriftFactor], [backend.LeaseDeadline]), so a leader cut off
// from etcd reaches it before the server expires the lease; a crashed
// leader's successor is elected TTL to TTL + 0.5 s after its last
// keepalive. [Options.RequestTimeout] (3 s) bounds each request made for a
// caller, [Options.CleanupTimeout] (2 s) the work done after the caller's
// context ended (deleting a cancelled Campaign's key, Close's revokes).
//
// # Safety
//
// Mutual exclusion rests on etcd's linearizable writes and lease expiry,
// and on this process's monotonic clock running no more than DriftFactor
// slower than the etcd leader's over one TTL; the Deadline moves only on
// acknowledgements the current raft leader recorded. etcd releases before
// 3.4.31, 3.5.13 and 3.6.0 revoke leases early after a raft leader pause
// (etcd-io/etcd#15247): the driver reads the members' versions once per
// Backend, and on an affected or silent member ends the terms at every
// raft leader change instead (Renew and Campaign return errors wrapping
// [backend.ErrLost]), campaigning on a new etcd lease; upgrade to keep
// them. A process paused past its Deadline may still believe it leads:
// fence writes with [Backend.Guard] or the token.
//
// # Errors
//
// Invalid names, identities, TTLs and options wrap [backend.ErrInvalid];
// calls after Close wrap [backend.ErrClosed]; a lease known to be gone
// wraps [backend.ErrLost]; Leader of an election without candidates wraps
// [backend.ErrNoLeader]. Context errors are returned unwrapped. Other
// errors (an unreachable cluster, a lost quorum) are transient and arrive
// within RequestTimeout, naming the cause. The driver logs nothing; the
// etcd client's log is configured on the client.
package etcd
