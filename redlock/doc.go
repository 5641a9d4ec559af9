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
// Importing this package registers the schemes redis and rediss (TLS) with
// package backendurl, whose documentation states the rules every scheme
// shares:
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
// published on the channel lock key + "//released".
//
// A Campaign round runs SET NX PX (with the counter's INCR) on every node
// and wins when a quorum said yes within the validity TTL − elapsed −
// (TTL × DriftFactor + 2 ms). A candidate that loses to a holder waits for
// the holder's keys to expire or for a published release. Renew is
// compare-and-pexpire and never re-creates a lapsed key; Release is
// compare-and-delete on every node.
//
// # Fencing
//
// Redis has no counter shared by N masters, so the token is a quorum
// counter: the winning round takes the highest counter m its quorum
// returned and, unless a quorum already holds m, writes it back to a
// quorum before the term starts. Any later winning quorum intersects that
// one, so its token is larger: tokens strictly increase under the
// assumptions in Safety. Tokens start at 1 and are exact up to 2^53.
//
// [Fence] protects a resource kept in Redis: a script that performs a
// write only if the caller's token is at least the highest the resource
// has seen, refusing a stale one with [ErrStaleToken]. Redlock has no
// Guard (a write that commits only while the term is current): its term
// lives on N independent masters, so a Fence only refuses writes once a
// newer term has written to the same resource.
//
// # Timing
//
// Each request to one node is bounded by [Options.RequestTimeout]
// ([DefaultRequestTimeout], 100 ms), except a renewal's, which waits until
// the lease's Deadline. A lease's Deadline is the send time of its last
// successful acquire or renew round plus TTL − (TTL × DriftFactor + 2 ms)
// on this process's monotonic clock ([backend.LeaseDeadline]); DriftFactor
// defaults to 0.01. TTLs are rounded up to whole milliseconds, from
// [MinTTL]. A graceful hand-over takes about one round trip after the
// release; a crashed holder is replaced about one TTL after its last
// renewal.
//
// # Safety
//
// Mutual exclusion and rising tokens hold under Redlock's own assumptions
// (the Redis documentation; antirez, "Is Redlock safe?",
// http://antirez.com/news/101):
//
//   - Nodes that restart without persistence stay out of quorums for a
//     TTL. The Backend enforces it: it counts no reply of a node until the
//     node has been up for [Options.RestartDelay] (default: the longest TTL
//     it campaigned with), learnt from INFO server on every new connection.
//     It cannot see a restart behind a proxy that keeps the connection
//     open, nor trust the uptime of a node whose wall clock jumps; other
//     processes with longer TTLs need RestartDelay set to theirs. A
//     majority restarting empty keeps exclusion but loses the counter: the
//     next token may be lower, and a [Fence] refuses the new leader until
//     its token passes the old ones. With appendonly yes and appendfsync
//     always nothing is lost, and [Options.NoRestartDelay] spares the delay.
//   - Clocks advance at about the same rate: this process's monotonic
//     clock and the nodes' expiry clocks drift apart by at most TTL ×
//     DriftFactor + 2 ms over one TTL. Redis expires keys by wall clock: a
//     forward jump of a node's clock by more than the TTL, while the node
//     is part of a holder's bare quorum, can elect a second leader until
//     the first one's next renewal (the token still rises, so a Fence
//     refuses the old leader once the new one has written). Run a slewing
//     time daemon.
//   - A process paused past its Deadline may act after its lease expired;
//     the fencing token makes its writes harmless if the resource checks it
//     (Kleppmann, "How to do distributed locking",
//     https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html).
//
// Choose the etcd, zookeeper or kube driver when a violation of these
// assumptions is not acceptable.
//
// # Errors
//
// [New] returns an error wrapping [backend.ErrInvalid] for invalid clients
// or options; Campaign and Leader do for names [backend.ValidateElection]
// refuses (Campaign also for an invalid identity or a TTL below [MinTTL]).
// Calls after Close wrap [backend.ErrClosed]. Renew returns an error
// wrapping [backend.ErrLost] when no quorum can hold the lease or its
// Deadline has passed; Leader one wrapping [backend.ErrNoLeader] when no
// quorum agrees on a holder. Other errors (too few nodes answered, a late
// quorum) are transient. Context errors are returned unwrapped.
package redlock
