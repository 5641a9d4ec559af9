// Package etcd is the etcd driver of elector: leader elections stored in an
// etcd v3 cluster, wire-compatible with the elections of etcd's own
// go.etcd.io/etcd/client/v3/concurrency package and of `etcdctl elect`.
//
//	cli, _ := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}})
//	b, _ := etcd.New(cli, nil)
//	e, _ := elector.New(b, "send-invoices", &elector.Options{TTL: 5 * time.Second, OnElected: lead})
//
// Endpoints, TLS and username/password are configured on the client; the
// driver only uses it.
//
// # URLs
//
// Importing this package registers the schemes etcd and etcds (TLS) with
// package backendurl, whose documentation states the rules every scheme
// shares (hosts, credentials, TLS parameters, redaction):
//
//	etcd://[user:password@]host:port[,host:port...][?params]
//
// The hosts are the endpoints of one cluster; the port defaults to 2379. A
// URL has no path. Parameters:
//
//	prefix           Options.Prefix (default "", etcd's own layout)
//	request_timeout  Options.RequestTimeout (default 3s)
//	cleanup_timeout  Options.CleanupTimeout (default 2s)
//	drift_factor     Options.DriftFactor (default 0.01)
//	dial_timeout     the client's DialTimeout (default 5s)
//
// For example:
//
//	etcds://elect:secret@10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379?prefix=/billing/&ca=/etc/elect/ca.pem
//
// # Key layout
//
// A candidate in election E writes the key
//
//	<Options.Prefix>E/<etcd lease ID in lowercase hex>
//
// with its identity as the value, attached to an etcd lease. The leader is
// the candidate key with the lowest create revision, and every waiting
// candidate watches only its immediate predecessor's key (no herd effect).
// This is the layout of concurrency.NewElection(session, E) and of
// `etcdctl elect E`: with the default empty Prefix, `etcdctl elect -l E`
// and Election.Leader report an elector leader, and their candidates queue
// with this driver's in one line, in both directions (the layout is
// upstream's
// https://github.com/etcd-io/etcd/blob/main/client/v3/concurrency/election.go:
// Campaign puts pfx + "/" + the lease ID in hex, then waits for the deletion
// of the key with the next lower create revision).
//
// This driver fixes what upstream gets wrong:
//
//   - Election names that prefix one another ("jobs" and "jobs/eu") are
//     distinct: only keys directly under E/ whose last segment is a lease ID
//     count. Upstream clients still count the keys of "jobs/eu" as
//     candidates of "jobs", so an upstream candidate of "jobs" may wait
//     behind a "jobs/eu" holder; keep such names apart when mixing clients.
//   - A Campaign whose key or lease disappears while it waits returns an
//     error wrapping [backend.ErrLost] at once
//     (https://github.com/etcd-io/etcd/issues/19597), and after each wait it
//     re-reads the queue, so it never wins without its own key.
//   - A Campaign whose ctx ends deletes its key
//     (https://github.com/etcd-io/etcd/issues/21128 leaves it, blocking the
//     election until the lease ends).
//   - A failed Release gives the lease up all the same: the key is deleted
//     by the session's next keepalive, or lapses with the session, which
//     takes no new candidates (the concurrency package's Resign leaves it
//     for as long as the session is kept alive).
//
// The registry of candidates with a priority ([backend.Registry], for
// preferred leaders) keeps one key per candidate,
//
//	<Options.Prefix>../candidates/E/<etcd lease ID in lowercase hex>
//
// with the value [backend.EncodeEntry] writes, on an etcd lease of its own
// that the candidate keeps alive while it runs and Close revokes. No
// election's keys lie under it (a name's segments are never ".."), so
// etcdctl and the concurrency package never read an entry as a candidate.
//
// # Leases
//
// All candidates of one [Backend] with the same TTL share one etcd lease
// (at most one candidate per election on it, since they would write the
// same key; a second concurrent candidate for an election gets a lease of
// its own). Nothing renews it in the background: it is kept alive by
// [backend.Lease.Renew] of the leases it carries and by the Campaigns
// waiting on it, every TTL/3. Renewals share keepalives: a Renew reuses an
// acknowledgement sent within the last TTL/5, provided it is newer than the
// one that lease used last, and concurrent Renews share one request. Each
// keepalive is followed by one linearizable read that verifies it (see
// section Safety). So hundreds of elections on one Backend cost a few
// keepalives per TTL, and a lease nobody renews really lapses at the
// server, as a crashed process's would. While another candidate of the same Backend still renews or waits
// on the shared etcd lease, though, the keys on it stay alive: the
// [backend.Lease.Deadline] of each lease reflects that honestly.
//
// Close revokes the Backend's etcd leases, so successors are elected at
// once; a lease that cannot be revoked expires after its TTL.
//
// # Fencing
//
// The token of a term is the create revision of its candidate key:
// revisions are cluster-wide and strictly increasing, so a successor's
// token is always greater. [Backend.Guard] turns a term into a
// clientv3.Cmp for the If of a transaction that commits only while the term
// is current (etcd-io/website "Notes on the usage of lock and lease": the
// fencing token is the revision). Resources outside etcd should refuse
// tokens lower than the highest they have seen.
//
// A Guard is stronger than the Fence of the redlock driver: it checks, at
// the store and atomically with the write, that the term is still current,
// where a Fence checks only that no newer term has written to the same
// resource. etcd can offer it because a term is one key in the same store
// as the guarded writes; a Redlock term lives on N independent masters.
//
// # Timing
//
// etcd leases are whole seconds: a TTL is rounded up. A TTL under one
// second, or one the cluster would raise (the server grants no lease
// shorter than ceil(1.5 × its election timeout), 2 s with etcd's default
// 1 s election timeout), makes Campaign return an error wrapping
// [backend.ErrInvalid] that names the allowed range: the lease would
// outlive what the caller asked for.
//
// Deadline is computed locally from keepalive acknowledgements: the send
// time of the newest trusted acknowledged keepalive (or of the grant) plus
// the granted TTL less the drift allowance ([Options.DriftFactor],
// [backend.LeaseDeadline]). The server extends a lease by its TTL from when
// it receives the keepalive, which is later, so a leader cut off from etcd
// reaches its Deadline before its lease can expire at the server (but see
// section Safety for etcd releases that revoke leases early). Upstream's
// Session.Done fires no earlier than the server-side expiry. The server checks for expired leases every 500 ms, so a crashed
// leader's successor is elected between TTL and TTL + 0.5 s after its last
// keepalive.
//
// Two options bound the driver's requests: [Options.RequestTimeout] (3 s by
// default) bounds each request made on behalf of a caller (see Errors), and
// [Options.CleanupTimeout] (2 s) bounds the work done after the caller's
// context has ended (deleting the key of a Campaign that was cancelled,
// revoking the leases in Close), which no caller's context bounds.
//
// # Errors
//
// Invalid names, identities, TTLs and options wrap [backend.ErrInvalid];
// calls after Close wrap [backend.ErrClosed]; a lease known to be gone
// wraps [backend.ErrLost]; Leader of an election without candidates wraps
// [backend.ErrNoLeader]. Context errors are returned unwrapped. Every other
// error (an unreachable cluster, a lost quorum) is transient.
//
// The etcd client waits for a connection for as long as a request's context
// lasts, and then reports only "context deadline exceeded". So every request
// the driver makes is bounded by [Options.RequestTimeout] (3 s by default):
// a cluster that cannot be reached makes Campaign, Leader, Watch and Renew
// return a transient error within a few seconds that names the cause, from
// the client's connection state and its last connection error (a refused
// connection, a name that does not resolve, a certificate the client does
// not trust), rather than leave the caller waiting in silence. A Campaign
// waiting behind an older candidate keeps waiting; keepalives of its lease
// that fail meanwhile are tried again shortly, and once the lease's local
// deadline has passed without one the Campaign returns the failure, and
// the caller campaigns again.
//
// The driver logs nothing and has no Logger option: every failure it sees
// reaches the caller as an error. The etcd client's own log is configured
// on the client (clientv3.Config.Logger).
//
// # Safety
//
// Mutual exclusion rests on etcd's linearizable writes and lease expiry,
// and on this process's monotonic clock not running more than DriftFactor
// slower than the etcd leader's over one TTL. The Deadline moves only on
// acknowledgements the raft leader recorded: keepalives and campaign
// requests carry clientv3.WithRequireLeader, and a keepalive counts only if
// a linearizable read sent after its acknowledgement is served in the same
// raft term. (A paused or partitioned old leader answers keepalives from its
// own lessor until it learns of its successor; such an acknowledgement
// shows an older term and is ignored.)
//
// etcd releases before 3.4.31, 3.5.13 and 3.6.0 have a server bug,
// https://github.com/etcd-io/etcd/issues/15247 (fixed by
// https://github.com/etcd-io/etcd/pull/16822): a raft leader that stalls
// or is paused for longer than a lease's TTL, then runs again, revokes the
// leases that expired by its own clock although its successor kept them
// alive, and the keys are deleted long before their Deadline. The driver
// reads the members' versions (Maintenance Status) once per Backend, before
// its first etcd lease. When a member runs an affected release, or does not
// answer, an etcd lease is no longer renewed once a keepalive shows a newer
// raft term than the lease's previous one: Renew and Campaign return an
// error wrapping [backend.ErrLost], the Deadline stays where the old
// leader's clock also counts the lease alive, and the caller steps down
// before the old leader can revoke it; the next Campaign gets a new etcd
// lease, which the old leader never knew. On affected releases a raft
// leader change therefore costs the current terms; upgrade to keep them.
//
// A process paused past its Deadline may still believe it leads: fence
// writes with [Backend.Guard] or the token.
package etcd
