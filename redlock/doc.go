// Package redlock is the Redlock driver of elector: a [backend.Backend] that
// holds elections on N independent Redis masters with the algorithm of the
// Redis documentation ("Distributed Locks with Redis",
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
//
// # URLs
//
// Importing this package registers the schemes redis and rediss (TLS) with
// package backendurl, whose documentation states the rules every scheme
// shares (hosts, credentials, TLS parameters, redaction):
//
//	redis://[user:password@]host:port[,host:port...][/db][?params]
//
// Each host is one independent master of the quorum (3 or 5 for fault
// tolerance), never a replica of another; the port defaults to 6379 and the
// path is the database number (default 0). Parameters:
//
//	prefix           Options.Prefix (default "elector:")
//	no_prefix        Options.NoPrefix (bool; default false)
//	request_timeout  Options.RequestTimeout (default 100ms)
//	drift_factor     Options.DriftFactor (default 0.01)
//	dial_timeout     the clients' dial timeout (default go-redis's, 5s)
//
// For example:
//
//	redis://:secret@10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.4,10.0.0.5?prefix=billing:&request_timeout=50ms
//
// # Key layout
//
// The lock key of an election is [Options.Prefix] + election (by default
// [DefaultPrefix], "elector:"), a plain string key with a PX expiry, so a
// redsync or node-redlock lock of the same key excludes an elector leader
// and the reverse (set [Options.NoPrefix] to make the key the bare
// election name). Its value is "<lease id> <token> <identity>", with a
// lease id of 16 random bytes per campaign. The counter key is lock key +
// "//token"; it never expires, as fencing needs it to persist. Releases
// are announced on the pub/sub channel lock key + "//released".
//
// The registry of candidates with a priority ([backend.Registry], for
// preferred leaders) is the sorted set lock key + "//candidates" on every
// node: one member "<entry id> <version> <entry>" per candidate, scored by
// its expiry on the node's clock, TTL after its last write; the candidate
// writes it again while it runs, and Close withdraws it. Writes need a
// quorum, reads read a quorum and take each entry's latest version, and
// writes are announced on the channel of the same name. redsync and
// node-redlock never read it.
//
// # Leases
//
// A lease is a key on a quorum of the nodes, won, renewed and released with
// the algorithm of the Redis documentation.
//
// Campaign runs rounds. A round takes the time (monotonic), then in parallel
// runs on every node a script equivalent to SET key value NX PX ttl that,
// when the key was free, also INCRs the election's counter and stores the
// result in the value. Each request is bounded by [Options.RequestTimeout]. The
// round wins when a quorum answered yes and the validity
//
//	TTL − elapsed − (TTL × DriftFactor + 2 ms)
//
// is still positive; a late quorum is a failure. After a failed round the
// candidate sends compare-and-delete to every node it may have reached,
// including those that errored or timed out, each after that node's acquire
// request has finished; these deletions announce nothing, since the key was
// never a term. A round answered by too few nodes makes Campaign return an
// error (the portable layer retries). A round lost to a holder (one value on
// a quorum of the nodes) makes it wait: until enough of the holder's keys
// can have expired to free a quorum (the PTTLs the nodes reported, plus 1 ms
// and a little jitter), or until a release is announced, whichever comes
// first. Releases of terms are PUBLISHed on the channel lock key +
// "//released" on every node; a Backend subscribes to an election's channel
// only while one of its candidates waits on it (and tries once more right
// after subscribing, so no release is missed), so an uncontended election
// costs no pub/sub traffic. A round lost with no holder on a quorum means
// that rival candidates split the nodes among themselves and are deleting
// their keys: each backs off at random, for up to 2, 4, 8 … times the
// round's duration (at least 1 ms) after each split in a row (at most
// TTL/4). So waiters behind a crashed holder run a
// few rounds each per TTL, not a round each time a rival's round fails.
//
// A Backend bounds the acquire rounds it has in flight with a window that
// works as TCP's congestion window: it starts at 8 rounds, grows by one
// with each round the nodes answered in time, halves when a round fails
// because too few nodes answered within RequestTimeout, and stays between 4
// and 256. So thousands of Electors starting at once on one Backend, on a
// host short of CPU, get elected in waves instead of timing out together,
// retrying together, and starving the renewals of the leases already won.
// Renewals and releases never wait behind it.
//
// Renew is compare-and-pexpire on every node; it succeeds when a quorum
// still held the lease within the validity measured from the renewal's
// start, and never re-creates a key that lapsed. On a Backend whose clients
// are all single servers (*redis.Client), the renewals of every lease held
// through it share calls: the Renew calls that arrive while one batch is on
// the wire go out together, one script call per node for up to 1,000 keys,
// and each call is topped up with the Backend's idle leases whose last
// renewal is older than TTL/6 (riders). A rider's next Renew, if it comes
// within TTL/6 of that batch, succeeds without a request. Riders share
// their batch's Deadline, and an Elector renews RenewInterval after the
// proof behind the Deadline, so the leases of a Backend are renewed
// together. So a process
// holding 10,000 leases sends about one call per node per 1,000 leases per
// renew interval instead of one per lease. Each lease keeps its own
// outcome: its Deadline counts from the send time of the batch that
// confirmed it, and a batch that finds a quorum no longer holding a lease,
// rider or not, closes its Lost channel. Cluster and Ring clients renew each
// lease on its own (a script may not span hash slots). Release is compare-and-delete
// on every node, each deletion announced with PUBLISH so a waiting candidate
// is elected at once; it returns as soon as no quorum can hold the lease,
// and the same Backend's next acquire of the election is sent to each node
// only after that node's deletion, so it does not find the old key there.
// When a quorum of nodes has finished those deletions, the acquire leaves
// out the nodes still busy with theirs (it sends them nothing, and its
// lease's release sends them nothing unless a renewal reached them), so a
// candidate that releases and campaigns again at once does not queue
// requests behind the slowest nodes: a round needs only the fastest
// quorum, and a node that gets every request of every term falls behind
// until its requests time out. In a release-and-campaign loop a term then
// costs about three acquire and three release requests instead of five
// each.
// Scripts are sent with EVALSHA, falling back to EVAL.
// # Fencing
//
// Redis has no native counter shared by N masters, so the token is a quorum
// counter. When a round wins, the lease takes the maximum m of the counters
// the acquiring quorum returned and, unless a quorum already returned m,
// writes it back (the counter becomes max(counter, m) on every node, and the
// value on our nodes records m) before the term starts; a write-back that
// misses the quorum or the validity fails the round. Any later winning
// quorum intersects the quorum that holds m, INCRs there past m, and so gets
// a larger token: tokens strictly increase across the leases of one
// election, under the assumptions in # Safety. The acquire script also
// raises the counter to one more than the highest token the Backend has
// seen for the election, so that a node which missed recent terms (left
// out, failed) catches up in the same call and the counters agree. A lease keeps its token
// across renewals. Tokens start at 1 and are exact up to 2^53 (Redis hands
// INCR's result to Lua as a double). The write-back costs one more parallel
// round only when the counters disagree (after node restarts or lost
// rounds); in steady state the acquire round alone yields the token.
//
// A token protects a resource only if the resource checks it. [Fence] does
// so for a resource kept in Redis: a script that performs a write only if the
// caller's token is at least the highest the resource has seen, refusing a
// stale one with [ErrStaleToken].
//
// Redlock has no Guard, the store-side condition the etcd and zookeeper
// drivers offer (a write that commits only while the term is current at the
// store): a Redlock term is held on N independent masters, and no single
// store can check it atomically with a write. A Fence only refuses writes
// once a newer term has written to the same resource.
//
// # Timing
//
// Each request to one node is bounded by [Options.RequestTimeout] (default
// 100 ms, [DefaultRequestTimeout]), except a renewal's: its validity counts
// from its send time, so it waits for replies until the lease's Deadline,
// and a host starved of CPU or a node stalled for a moment costs a held
// lease nothing while the lease has time left. The DriftFactor is 0.01 by
// default ([backend.DefaultDriftFactor], as in every driver). Rounds return
// as soon as their outcome is decided (a quorum agrees), so a slow or
// stopped node costs nothing while the others answer.
//
// A lease's Deadline is the send time of the last successful acquire or
// renew round (for a batched renewal, the batch's) plus TTL − (TTL ×
// DriftFactor + 2 ms), on this process's monotonic clock
// ([backend.LeaseDeadline]). The portable layer steps down before it. TTLs
// are rounded up to whole milliseconds (the precision of PX); the shortest
// is [MinTTL], and there is no longest. A graceful hand-over takes about
// one round trip after the release; a crashed holder is replaced about one
// TTL after its last renewal.
//
// # Errors
//
// Campaign and Leader return errors wrapping backend.ErrInvalid for names
// that [backend.ValidateElection] refuses (and Campaign for an invalid
// identity or a TTL below [MinTTL]), and backend.ErrClosed after Close;
// [New] returns one wrapping backend.ErrInvalid for invalid clients or
// options.
// Renew returns an error wrapping backend.ErrLost when no quorum can hold the
// lease any more or its Deadline has passed; Leader returns one wrapping
// backend.ErrNoLeader when no quorum agrees on a holder. Other errors (too
// few nodes answered, a late quorum) are transient. Context errors are
// returned unwrapped.
//
// # Safety
//
// Mutual exclusion, and the strict increase of tokens, hold under these
// assumptions, which are Redlock's own (the Redis documentation above;
// antirez, "Is Redlock safe?", 2016, http://antirez.com/news/101):
//
//   - Nodes that restart without persistence stay out of quorums for a
//     TTL ("delayed restarts"). A node that restarts empty forgets the
//     locks it granted and the counter. The Redis documentation asks
//     operators to keep a crashed node down for longer than the longest
//     TTL; a Backend enforces it from the client side instead: it asks each
//     node for INFO server (run_id, uptime_in_seconds) when it first uses
//     it and whenever a client dialled a new connection to it (a restart
//     closes them all), and counts no reply of a node toward any quorum
//     until the node has been up for [Options.RestartDelay] (by default the
//     longest Candidate.TTL the Backend campaigned with). A Campaign that
//     finds too few nodes counting waits for them, as behind a holder.
//     Every lock a restarted node granted before its crash has expired by
//     then, and so has the lease of a holder that counted on it: its last
//     successful renewal came before the crash. After a winning round, the
//     election's counter is raised to the new token on the nodes that did
//     not grant it, so that a minority of the acquiring quorum restarting
//     empty does not leave the token on too few nodes; each renewal that
//     confirms the quorum also puts the lease back on nodes that lost it.
//     What this verifies: nodes that restart (any number), as seen through
//     a client's own connections. What it does not: a proxy that keeps the
//     client's connection open across a node's restart hides it until the
//     proxy's connection drops (INFO is asked only on reconnection); a
//     node whose wall clock jumps reports a wrong uptime; and other
//     processes campaigning with longer TTLs than this Backend's need
//     RestartDelay set to theirs. A majority restarting empty keeps
//     exclusion (no second leader until the first one's lease has expired)
//     but loses the counter: the next token may be lower than the last
//     one, and a [Fence] then refuses the new leader's writes until its
//     token passes the old ones. With appendonly yes and appendfsync
//     always nothing is lost, and [Options.NoRestartDelay] spares the
//     delay. TestMinorityRestartAfterHandOver, TestRestartDelayOff,
//     TestRestartWithoutPersistence and TestRestartWithAOF show these
//     cases; the chaos campaign (integration_test/chaos, campaign
//     redlock-noaof-restarts) restarts one or two of five nodes at random
//     and right after hand-overs.
//   - Clocks advance at about the same rate: the drift between this
//     process's monotonic clock and the nodes' expiry clocks stays within
//     TTL × DriftFactor + 2 ms over one TTL. Redis expires keys by wall
//     clock (server.c's mstime and ustime read gettimeofday), so a step of
//     a node's wall clock (an NTP jump, a manual change) can expire a lock
//     early. Run the nodes with a slewing time daemon. A forward jump of
//     a node's clock by more than the TTL, while the node is part of a
//     holder's bare quorum (just after a hand-over, before the holder
//     reaches the other nodes), expires the holder's key there at once: a
//     rival can win that node with the nodes the holder lacks, and two
//     leaders act until the first one's next renewal finds the quorum
//     gone. The token still rises (a clock jump loses no counter), so a
//     [Fence] refuses the old leader's writes from the new leader's first
//     write on; it cannot refuse those that come before. Slews within the
//     drift allowance do no harm. The chaos campaign's clock mode
//     (integration_test/chaos, campaign redlock-noaof-clock) moves the
//     nodes' wall clocks under an LD_PRELOAD shim (libfaketime deadlocks
//     with the jemalloc that Debian's redis-server links,
//     https://github.com/wolfcw/libfaketime/issues/130); its results are
//     in docs/chaos.md of the repository.
//   - A process pause (GC, a stopped VM) longer than the margin between the
//     portable layer's step-down and the Deadline lets the paused leader act
//     after its lease expired. No lock service can prevent that (Kleppmann,
//     "How to do distributed locking", 2016,
//     https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html);
//     the fencing token is what makes
//     the paused leader's writes harmless, if the resource checks it.
//
// Kleppmann argues that an algorithm that depends on these timing
// assumptions should not be trusted with correctness, and that a consensus
// system (this module's etcd and zookeeper drivers) should be used instead;
// antirez answers that the assumptions are reasonable in practice. This
// driver makes the assumptions explicit, measures all time on the monotonic
// clock, and adds the fencing token Kleppmann found missing, so that a
// resource that checks tokens is protected against stale leaders; but the
// counter behind the token relies on the same persistence assumption as the
// lock itself. Choose the etcd or zookeeper driver when a violation of the
// assumptions is not acceptable.
package redlock
