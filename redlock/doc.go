// Package redlock is the Redlock driver of elector: leader elections held
// on N independent Redis masters with the algorithm of the Redis
// documentation ("Distributed Locks with Redis",
// https://redis.io/docs/latest/develop/use/patterns/distributed-locks/),
// plus a fencing token the plain algorithm lacks.
//
//	clients := []redis.UniversalClient{ /* 5 independent masters, each with ContextTimeoutEnabled: true */ }
//	b, err := redlock.New(clients, nil)
//	e, err := elector.New(b, "send-invoices", &elector.Options{ ... })
//
// Each client is one node: a single master, or a Redis Cluster or Sentinel
// group, which counts as ONE node (its replication is asynchronous, so a
// failover can lose a lock). Use 3 or 5 nodes; the quorum is N/2+1.
// Exclusion rests on timing and persistence assumptions (see Safety); the
// derivations are in
// https://github.com/leaderkit/elector/blob/main/docs/design/redlock.md.
//
// # URLs
//
// Importing this package registers redis and rediss (TLS) with package
// backendurl, which states the shared rules:
//
//	redis://[user:password@]host:port[,host:port...][/db][?params]
//
// Each host is one independent master of the quorum, never a replica of
// another; the port defaults to 6379 and the path is the database number
// (default 0). Parameters: prefix (Options.Prefix, default "elector:"),
// no_prefix (Options.NoPrefix), request_timeout (Options.RequestTimeout,
// default 100ms), drift_factor (Options.DriftFactor, default 0.01),
// dial_timeout (the clients' dial timeout, default go-redis's 5s). For
// example:
//
//	redis://:secret@10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5?prefix=billing:&request_timeout=50ms
//
// # Layout
//
// The lock key of an election is [Options.Prefix] + election (the bare
// name with [Options.NoPrefix]), a plain string key with a PX expiry, so a
// redsync or node-redlock lock of the same key excludes an elector leader
// and the reverse. Its value is "<lease id> <token> <identity>". The
// fencing counter is lock key + "//token" and never expires; releases are
// published on the channel lock key + "//released". A round runs SET NX PX
// (with the counter's INCR) on every node and wins when a quorum said yes
// within the validity TTL − elapsed − (TTL × DriftFactor + 2 ms); a loser
// waits for the holder's keys to expire or for a published release. Renew
// is compare-and-pexpire and never re-creates a lapsed key.
//
// The registry of candidates with a priority ([backend.Registry], for
// preferred leaders) is the sorted set lock key + "//candidates" on every
// node, each member scored by its expiry on the node's clock; writes need a
// quorum, reads take each entry's latest version from a quorum. redsync and
// node-redlock never read it.
//
// # Fencing
//
// Redis has no counter shared by N masters, so the token is a quorum
// counter: a winning round takes the highest counter its quorum returned
// and makes a quorum hold it before the term starts, so any later winning
// quorum counts past it. Tokens strictly increase under the assumptions in
// Safety; they start at 1 and are exact up to 2^53. [Fence] protects a
// resource kept in Redis: a script that writes only if the caller's token
// is at least the highest the resource has seen, else returns
// [ErrStaleToken]. There is no Guard: a term lives on N independent
// masters, so no store can check it atomically with a write.
//
// # Timing
//
// Each request to one node is bounded by [Options.RequestTimeout]
// ([DefaultRequestTimeout], 100 ms), except a renewal's, which waits until
// the lease's Deadline: the send time of the last successful round plus
// TTL − (TTL × DriftFactor + 2 ms) ([backend.LeaseDeadline]; DriftFactor
// 0.01 by default). TTLs are rounded up to whole milliseconds, from
// [MinTTL]. A hand-over takes about one round trip after the release; a
// crashed holder is replaced about one TTL after its last renewal.
//
// # Safety
//
// Mutual exclusion and rising tokens hold under Redlock's own assumptions
// (the Redis documentation; antirez, http://antirez.com/news/101):
//
//   - Nodes that restart without persistence stay out of quorums for a
//     TTL. The Backend enforces it: it counts no reply of a node up for
//     less than [Options.RestartDelay] (default: its longest TTL), learnt
//     from INFO server on every new connection; not behind a proxy that
//     keeps connections open, nor on a node whose wall clock jumps; other
//     processes with longer TTLs need RestartDelay set to theirs. A
//     majority restarting empty keeps exclusion but loses the counter: the
//     next token may be lower, and a [Fence] refuses the new leader until
//     its token passes the old ones. appendonly yes with appendfsync always
//     loses nothing ([Options.NoRestartDelay] then spares the delay).
//   - This process's monotonic clock and the nodes' expiry clocks drift
//     apart by at most TTL × DriftFactor + 2 ms over one TTL. Redis expires
//     keys by wall clock: a node's clock jumping forward by more than the
//     TTL while it is part of a holder's bare quorum can elect a second
//     leader until the first one's next renewal (tokens still rise, so a
//     Fence refuses the old leader once the new one has written). Run a
//     slewing time daemon.
//   - A process paused past its Deadline may act after its lease expired:
//     only a resource that checks the token is safe from it (Kleppmann,
//     https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html).
//
// Choose a consensus store (etcd, zookeeper, kube) when a violation of
// these assumptions is not acceptable.
//
// # Errors
//
// Invalid clients or options ([New]), names [backend.ValidateElection]
// refuses, identities and TTLs below [MinTTL] wrap [backend.ErrInvalid];
// calls after Close wrap [backend.ErrClosed]. Renew returns an error
// wrapping [backend.ErrLost] when no quorum can hold the lease or its
// Deadline has passed; Leader one wrapping [backend.ErrNoLeader] when no
// quorum agrees on a holder. Other errors (too few nodes answered, a late
// quorum) are transient. Context errors are returned unwrapped.
package redlock
