// Package zookeeper is the ZooKeeper driver of elector: leader elections
// stored as ephemeral sequential znodes in a ZooKeeper ensemble, in the
// format of Apache Curator's LeaderLatch, so that Java services using
// Curator and Go services using elector take part in one election.
//
//	b, _ := zookeeper.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, nil)
//	defer b.Close()
//	e, _ := elector.New(b, "send-invoices", &elector.Options{TTL: 40 * time.Second, OnElected: lead})
//
// The TTL must be at least [MinSafeTTL] of the ensemble's tickTime and
// syncLimit: 30.25s on an ensemble as ZooKeeper's sample configuration sets
// it up (tickTime 2s, syncLimit 5), 6.5s with tickTime 500ms and syncLimit
// 4 (see Safety).
//
// The [Backend] owns its ZooKeeper sessions (one go-zookeeper zk.Conn each),
// so it sees every connection-state change: a ZooKeeper session timeout is
// fixed when the session is made, and a lease's TTL is its session's
// timeout, so the Backend makes one session per distinct Candidate.TTL.
//
// # URLs
//
// Importing this package registers the schemes zk and zks (TLS, served on
// ZooKeeper's secureClientPort) with package backendurl, whose
// documentation states the rules every scheme shares (hosts, credentials,
// TLS parameters, redaction):
//
//	zk://[user:password@]host:port[,host:port...][?params]
//
// The hosts are the servers of one ensemble; the port defaults to 2181. A
// URL has no path. Parameters:
//
//	prefix            Options.Prefix (default "/elector")
//	disconnect_grace  Options.DisconnectGrace (default 0)
//	drift_factor      Options.DriftFactor (default 0.01)
//	tick_time         Options.TickTime (default: ask the servers)
//	sync_limit        Options.SyncLimit (default: ask the servers)
//
// A user and password add "digest" authentication to every session and
// protect the znodes the Backend creates with the matching digest ACL, so
// that only that user can read or change the election (see Security).
// Without them the znodes are world:anyone with all permissions (Curator's
// default): any client of the ensemble can delete the leader's znode and
// so end its term. For example:
//
//	zks://billing:secret@10.0.0.1,10.0.0.2,10.0.0.3:2281?prefix=/billing&ca=/etc/elect/ca.pem&cert=/etc/elect/client.pem&key=/etc/elect/client.key
//
// # Znode layout
//
// A candidate in election E creates the EPHEMERAL_SEQUENTIAL znode
//
//	<Options.Prefix>/E/_c_<uuid>-latch-<seq>
//
// holding its identity (UTF-8), where <uuid> is a random 36-character
// version-4 UUID and <seq> ZooKeeper's 10-digit sequence suffix: exactly
// what LeaderLatch on latch path <Options.Prefix>/E writes with its id (see
// LeaderLatch.java and LockInternals.java in
// https://github.com/apache/curator/tree/master/curator-recipes/src/main/java/org/apache/curator/framework/recipes).
// Missing parents are
// created as container nodes, as Curator does, so the server removes them
// once empty (ZooKeeper 3.5.3 or later is required). A Backend remembers the
// election znodes it made or found; the first Campaign in another election
// sends the create of the election's znode right ahead of its candidate's,
// so that a new election too costs one round trip. Candidates are sorted
// by the text after the last "latch-", and the first one leads, provided its
// ephemeralOwner is its creator's current session (Curator's CURATOR-696
// check). The children are listed by a request sent right behind the
// create, so an uncontended candidate leads after one round trip: it is
// first in that listing, its session sent the create and stayed connected,
// and its token is the create's zxid, which the reply's header carries.
// Each waiting candidate watches only its predecessor, with a data
// watch (no herd effect). So a Curator LeaderLatch reports an elector leader
// and queues behind it, and the other way round.
//
// Children of E that are not candidates are ignored: the election "a/b" is
// the child znode "b" of "a", and does not disturb "a". Election segments
// that start with "_c_" are refused, so that no election znode can pass for
// a candidate. (Curator sorts every child of a latch path, so a LeaderLatch
// on "a" would count "b" as a participant sorted after the candidates; keep
// child elections out of latch paths shared with Curator, especially names
// that begin with a digit.)
//
// The create is protected, as Curator's withProtection: after a connection
// loss during the create, the candidate looks for its uuid among the
// children rather than leave an orphan. A znode nobody will use (a Campaign
// whose ctx ended, a lease lost to a disconnection, a create whose outcome
// could not be learned) is deleted in the background as soon as the session
// is reachable: Curator's "guaranteed delete", and the only work the driver
// does unasked.
//
// # Sessions
//
// A Campaign with Candidate.TTL t uses the Backend's session of timeout t,
// made at the first Campaign with that TTL (requested session timeout = t)
// and shared by every candidate and lease of that TTL: the session's
// liveness (go-zookeeper's pings) keeps all of them, with no request per
// election. Two TTLs make two sessions, each on its own TCP connection.
//
// The servers clamp a requested session timeout to [minSessionTimeout,
// maxSessionTimeout], by default 2×tickTime to 20×tickTime
// (https://zookeeper.apache.org/doc/current/zookeeperProgrammers.html#ch_zkSessions).
// When the ensemble grants a timeout other than the TTL asked, that first
// Campaign returns an error wrapping [backend.ErrInvalid] that names what
// was asked, what was granted and the range that implies, for example
// "TTL 500ms: the ensemble granted a 1s session; it accepts session
// timeouts from 1s", and the session is closed. The driver itself asks only
// for TTLs between [MinTTL] and [MaxTTL], truncated to whole milliseconds
// (the unit of session timeouts); a TTL outside them is refused the same way
// without a session.
//
// [Backend.Leader] and [Backend.Watch] read on the oldest session that
// campaigns use, so a process that campaigns holds no extra session (each
// session is a TCP connection, and servers cap connections per client
// address with maxClientCnxns), and reads its own writes in order, as
// ZooKeeper orders the requests of one session. A Backend that has not
// campaigned yet reads on a session of its own (requested timeout 10s),
// kept until Close; a Watch stays on the session it started on.
//
// # Fencing
//
// The token of a term is the czxid of its candidate znode: the zxid of the
// transaction that created it, ensemble-wide and increasing. A successor's
// znode was created after its predecessor's, so its token is greater, even
// when the election znode (a container) was removed and made again.
// [Backend.Guard] returns a check operation for zk.Conn.Multi that commits
// the multi's writes only while the term's znode exists, that is while the
// term is current at the store.
//
// A Guard is stronger than the Fence of the redlock driver: it checks, at
// the store and atomically with the writes, that the term is still
// current, where a Fence checks only that no newer term has written to the
// same resource. ZooKeeper can offer it because a term is one znode in the
// same store as the guarded writes; a Redlock term lives on N independent
// masters.
//
// # Timing
//
// A lease's TTL is Candidate.TTL, which is its session's negotiated
// timeout. The driver reads the negotiated timeout and the send time of
// every request the servers answer, pings included, off the wire.
// [backend.Lease.Deadline] is [backend.LeaseDeadline] of a basis and the
// TTL: the basis plus the TTL, less TTL × [Options.DriftFactor] (1% by
// default) plus 2 ms for clock drift. Sessions expire at the ensemble's
// leader, one timeout after it last counted the session, and a follower
// tells the leader which sessions it heard from only in its reply to the
// leader's next ping, which the leader sends every tickTime/2; a follower
// whose leader is paused, or cut off from it, keeps answering for up to
// syncLimit × tickTime (see Safety). So the basis is the send time of the
// newest answered request that the leader must have counted: one answered
// by the session's handshake (the leader makes or revalidates the session),
// or one followed by the answer, on the same connection, to a request sent
// at least a report lag after the first answer arrived: the ensemble's
// [Timing.ReportLag], (syncLimit + 1) × tickTime + 100 ms, or TTL/4 if
// longer. A server counts a request from when it receives it, which is
// later, so a leader cut off from the ensemble reaches its Deadline before
// its session can expire. The basis trails the newest answer by the report
// lag and the gap between answered requests (a session holding leases sends
// a request of its own when it has had no answer for a twelfth of its
// timeout), so the Deadline stays about TTL × 11/12 less the report lag
// ahead, which is why Campaign refuses a TTL below [MinSafeTTL] (see
// Safety). A lease says so to the Elector (its Deadline trails its proof),
// which then renews it once per RenewInterval, on a grid shared by the
// Electors of the process, rather than whenever the Deadline looks due. go-zookeeper drops a connection
// silent for two thirds of the session timeout, so the default policy
// steps down at the latest two thirds of a TTL after the last answer.
//
// [backend.Lease.Renew] proves the session alive and the znode its own
// with a request of the session answered after Renew began. The listing
// that made a candidate leader leaves a children watch on the election's
// znode, which fires when a candidate znode of that election is added or
// deleted; the session's one dispatcher goroutine lists the children again
// when it fires (re-arming it, and ending the lease if its znode is gone),
// and applies the session's changes to every lease of the session. While
// that watch is armed and has not fired, a deletion of the znode would
// have been reported before the answer to a Renew's request, so the
// request is shared: the renewals of a session's leases that arrive
// together wait for one request (a ping, or one read sent for all of
// them), and a process holding many elections sends about one request per
// session per renew interval, not one per election. A lease whose watch is
// not armed reads its own znode. A held lease costs no goroutine and no
// request of its own, and an uncontended Campaign and its Release cost one
// create, the listing pipelined behind it, and one delete.
//
// [Options.DisconnectGrace] applies to every session, and must be at most
// half of every TTL campaigned with: a Campaign with a shorter TTL is
// refused with an error wrapping [backend.ErrInvalid], rather than let a
// grace outlast the time go-zookeeper gives a silent connection.
//
// The servers expire sessions in tickTime buckets, so a crashed leader's
// successor is elected between one TTL and one TTL plus a tick after its
// last packet.
//
// No option bounds a single request, unlike the RequestTimeout of the
// redlock and etcd drivers: go-zookeeper's requests take no context and
// cannot be withdrawn once sent. A call still returns when its ctx ends (it
// stops waiting; a late outcome, such as a candidate's znode created after
// all, is dealt with in the background). What bounds a request is its
// session's connection: go-zookeeper drops a connection on which the
// server has sent nothing, pings included, for two thirds of the session
// timeout, and every request pending on it fails. A new session's first
// handshake is awaited for at most 3 s (see Errors).
//
// # Errors
//
// Invalid options (from New) and TTLs (from Campaign, as above, and below
// [MinSafeTTL], see Safety) wrap [backend.ErrInvalid], and so do election
// names that ZooKeeper paths cannot hold: beyond [backend.ValidateElection], the characters
// U+007F-U+009F, U+D800-U+F8FF and U+FFF0-U+FFFF and characters outside the
// Basic Multilingual Plane (the Java server sees them as surrogates), and
// segments starting with "_c_". Calls after Close wrap [backend.ErrClosed];
// a lease known to be gone wraps [backend.ErrLost]; Leader of an election
// without candidates wraps [backend.ErrNoLeader]. Context errors are
// returned unwrapped. Other errors (no server reachable, lost quorum) are
// transient. While a session is being established, a call returns as soon
// as go-zookeeper has tried every server in vain, or after 3 s without an
// answer to the session handshake, with an error naming the servers and the
// last connection problem (a refused connection, a name that does not
// resolve, a server that accepted the connection but never answered),
// instead of go-zookeeper's bare "could not connect to a server" or a wait
// for as long as its ctx lasts.
//
// # Safety
//
// Mutual exclusion rests on ZooKeeper's ordered, quorum-committed writes and
// on session expiry (each lease on the expiry of its own TTL's session), and
// on these assumptions:
//
//   - this process's monotonic clock runs no more than
//     [Options.DriftFactor] (1% by default) slower than the ZooKeeper
//     leader's over one TTL;
//   - the ensemble's tickTime and syncLimit are at most those the Backend
//     works with ([Backend.Timing]): stated in [Options.TickTime] and
//     [Options.SyncLimit], else read from the servers' conf four-letter
//     word, else ZooKeeper's sample configuration (tickTime 2s, syncLimit
//     5) assumed. Raise the stated values before the ensemble's;
//   - packets between the ensemble's servers arrive within 100 ms, or are
//     lost.
//
// The leader alone expires sessions: its SessionTrackerImpl expires a
// session one timeout after its last touch, rounded up to a tick
// (ExpiryQueue.roundToNextInterval), and a resumed leader expires at once
// what fell due while it was stopped, before it reads what its followers
// queued (SessionTrackerImpl.run). A follower answers a client's request,
// pings included, by itself, and only notes the session
// (LearnerSessionTracker.touchSession); it reports the sessions it noted
// in its reply to the leader's next ping (Learner.ping), which the leader
// sends every tickTime/2 (Leader.lead) and counts when it reads the reply
// (LearnerHandler, case Leader.PING). A request the follower forwards (a
// sync, a write) enters the leader's pipeline without touching the session
// (LeaderZooKeeperServer.submitLearnerRequest), so no answer a client can
// see proves that the leader counted it: only a session handshake does
// (the leader makes or revalidates the session). A follower keeps serving
// while it hears from its leader at least every syncLimit × tickTime (its
// read timeout, set in Learner.syncWithLeader), so a paused leader, or a
// follower cut off from a running one, leaves the follower answering for
// up to that long with nothing counted, and the leader then expires the
// session by its own last count. Hence the report lag: a follower that
// answered a request sent (syncLimit + 1) × tickTime + 100 ms after an
// earlier answer arrived had heard from its leader at most syncLimit ×
// tickTime before, so the leader still ran a tick and 100 ms after that
// earlier answer: long enough to ping the follower and read its reply.
// With a TTL of at least [MinSafeTTL], the session also outlives any
// leader pause its followers ride out, so a resumed leader counts the
// follower's report before the session is due.
// On ZooKeeper's sample configuration that is a TTL of 30.25s or more;
// Campaign refuses a shorter one with an error naming the numbers. Sources
// (ZooKeeper 3.8.4; 3.5.5 to 3.9.5 forward and time out alike), under
// https://github.com/apache/zookeeper/blob/release-3.8.4/zookeeper-server/src/main/java/org/apache/zookeeper/server/:
// SessionTrackerImpl.java (run, line 158; touchSession, 179), ExpiryQueue.java
// (roundToNextInterval, 53), ZooKeeperServer.java (submitRequest touches
// the session, 1178; revalidateSession, 1036),
// quorum/LearnerSessionTracker.java (touchSession, 139), quorum/Learner.java
// (read timeout tickTime × syncLimit, 758; ping, 842), quorum/Leader.java
// (a ping every tickTime/2, 733), quorum/LearnerHandler.java (PING, 683),
// quorum/LeaderZooKeeperServer.java (submitLearnerRequest, 200).
//
// Further assumptions:
//
//   - the ensemble's leader pings its followers at least every TTL/4, that
//     is tickTime is at most half the shortest TTL: true of every TTL an
//     ensemble grants with the default minSessionTimeout (2×tickTime). A
//     follower paused or killed right after it answered a request never
//     reports it; the Deadline does not count such an answer until the
//     same server has answered a request sent at least TTL/4 (or the report
//     lag, if longer) after that answer arrived;
//   - nobody deletes a leader's znode by hand: that ends the term at the
//     store at once, and the leader learns it only through its watch. Any
//     client may do so unless the znodes have a restrictive ACL (see
//     Security).
//
// A process paused past its Deadline may still believe it leads: fence
// writes with [Backend.Guard] or the token.
//
// # Connection states
//
// Each session follows its own connection:
//
//   - Disconnected: by default every lease of the session is lost at once
//     (Curator's standard error policy: SUSPENDED means not leader), and its
//     znode is deleted, once the session reconnects, as soon as the holder
//     releases the lease (it has stopped acting) or the last Deadline it
//     was given passes, so the next candidate leads then and not while the
//     holder may still act. With [Options.DisconnectGrace] leases ride out a disconnection
//     for up to that long; on reconnection each checks that its znode is
//     still there (and so still first) and owned by the session.
//   - Expired: every lease of the old session is lost; go-zookeeper opens a
//     new session with the same timeout at once, and later Campaigns of
//     that TTL use it. A Campaign waiting
//     when the session ends returns an error wrapping [backend.ErrLost].
//   - Reconnected with the session intact: waiting Campaigns look at the
//     children again; watches are restored by go-zookeeper.
//
// Close ends every session: the servers delete their ephemeral znodes at
// once, so waiting candidates elsewhere are elected without waiting for a
// session timeout.
//
// # Security
//
// Who may touch an election is decided by the ACL of its znodes, set when
// each znode is created (the election parents and the candidates alike):
//
//   - Without [Options.Auth] and [Options.ACL] (and in a zk:// URL without
//     user and password) every znode is world:anyone with all permissions,
//     Curator's default. Any client that reaches the ensemble can then read
//     the identities of the candidates, join the election, and delete the
//     leader's znode, which ends the term at the store at once and elects
//     the next candidate: the old leader learns it only through its watch,
//     a round trip later, so only fencing ([Backend.Guard], the token)
//     protects a resource in between. Use this only on an ensemble that
//     untrusted clients cannot reach.
//   - With Options.Auth and no ACL, every znode is creator-only,
//     zk.AuthACL(zk.PermAll): the server grants all permissions to the
//     identities the creating session authenticated as (the digest user,
//     and over TLS the client certificate's identity when the server maps
//     certificates to identities), and nothing to anyone else, reads
//     included. So every participant of an election, Curator peers and
//     monitoring tools such as `elect status` alike, must authenticate as
//     one of those identities. A zk:// or zks:// URL with user and password
//     adds digest authentication and the ACL zk.DigestACL(zk.PermAll, user,
//     password): that user only.
//   - Options.ACL set is used as given, for example
//     append(zk.DigestACL(zk.PermAll, "svc", pw), zk.WorldACL(zk.PermRead)...)
//     to let anyone read who leads while only "svc" may campaign.
//
// An election parent keeps the ACL it was created with until it is removed
// (a container goes once it has no children), so Backends of one election
// should share one ACL.
//
// Digest credentials travel in clear over a plain connection. [Options.TLS]
// (or a zks:// URL, with ca, cert and key parameters) encrypts every
// connection and verifies the servers' certificates. ZooKeeper serves TLS on
// its secureClientPort with the Netty connection factory
// (serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory,
// ssl.keyStore.* and ssl.trustStore.*; see
// https://zookeeper.apache.org/doc/r3.8.0/zookeeperAdmin.html#Communication+using+the+Netty+framework),
// and by default requires a client certificate signed by a CA in its trust
// store. With the server's x509 auth provider
// (authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider)
// a session over TLS is authenticated as its certificate's subject, so
// Options{TLS: cfg, ACL: zk.AuthACL(zk.PermAll)} makes creator-only znodes
// without a password. A plain client on the secure port is dropped by the
// server: go-zookeeper logs EOF to [Options.Logger] and calls fail with
// zk.ErrNoServer.
package zookeeper
