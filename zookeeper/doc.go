// Package zookeeper is the ZooKeeper driver of elector: leader elections
// stored as ephemeral sequential znodes in a ZooKeeper ensemble, in the
// format of Apache Curator's LeaderLatch, so that Java services using
// Curator and Go services using elector take part in one election.
//
//	b, _ := zookeeper.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, nil)
//	defer b.Close()
//	e, _ := elector.New(b, "send-invoices", &elector.Options{OnElected: lead})
//
// The [Backend] owns its ZooKeeper session (one go-zookeeper zk.Conn), so it
// sees every connection-state change; all elections and candidates of a
// Backend share that session.
//
// # Znode layout and compatibility
//
// A candidate in election E creates the EPHEMERAL_SEQUENTIAL znode
//
//	<Options.Root>/E/_c_<uuid>-latch-<seq>
//
// holding its identity (UTF-8), where <uuid> is a random 36-character
// version-4 UUID and <seq> ZooKeeper's 10-digit sequence suffix: exactly
// what LeaderLatch on latch path <Options.Root>/E writes with its id
// (research/election-anchors.md § 3.2 and § D.2). Missing parents are
// created as container nodes, as Curator does, so the server removes them
// once empty (ZooKeeper 3.5.3 or later is required). Candidates are sorted
// by the text after the last "latch-", and the first one leads, provided its
// ephemeralOwner is its creator's current session (Curator's CURATOR-696
// check). Each waiting candidate watches only its predecessor, with a data
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
// # Connection states
//
//   - Disconnected: by default every lease of the Backend is lost at once
//     (Curator's standard error policy: SUSPENDED means not leader), and its
//     znode is deleted once the session reconnects, so the next candidate
//     leads. With [Options.DisconnectGrace] leases ride out a disconnection
//     for up to that long; on reconnection each checks that its znode is
//     still there (and so still first) and owned by the session.
//   - Expired: every lease of the old session is lost; go-zookeeper opens a
//     new session at once, and later Campaigns use it. A Campaign waiting
//     when the session ends returns an error wrapping [backend.ErrLost].
//   - Reconnected with the session intact: waiting Campaigns look at the
//     children again; watches are restored by go-zookeeper.
//
// Close ends the session: the servers delete its ephemeral znodes at once,
// so waiting candidates elsewhere are elected without waiting for a session
// timeout.
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
// # Timing
//
// A lease's TTL is the session timeout the servers negotiated
// ([Options.SessionTimeout], clamped by the servers; Candidate.TTL is
// ignored). The driver reads the negotiated timeout and the send time of
// every request the servers answer, pings included, off the wire.
// [backend.Lease.Deadline] is the send time of the newest answered request
// plus the negotiated timeout, less 1% of it plus 2 ms for clock drift: a
// server extends a session from when it receives a packet, which is later,
// so a leader cut off from the ensemble reaches its Deadline before its
// session can expire. go-zookeeper pings every third of the session timeout
// and drops a connection silent for two thirds of it, so the default policy
// steps down at the latest two thirds of a timeout after the last answer.
// [backend.Lease.Renew] reads the candidate znode: one round trip that
// proves the session alive and the znode its own.
//
// The servers expire sessions in tickTime buckets, so a crashed leader's
// successor is elected between one session timeout and one timeout plus a
// tick after its last packet.
//
// # Errors
//
// Election names that ZooKeeper paths cannot hold wrap [backend.ErrInvalid]:
// beyond [backend.ValidateElection], the characters U+007F-U+009F,
// U+D800-U+F8FF and U+FFF0-U+FFFF and characters outside the Basic
// Multilingual Plane (the Java server sees them as surrogates), and
// segments starting with "_c_". Calls after Close wrap [backend.ErrClosed];
// a lease known to be gone wraps [backend.ErrLost]; Leader of an election
// without candidates wraps [backend.ErrNoLeader]. Context errors are
// returned unwrapped. Other errors (no server reachable, lost quorum) are
// transient.
//
// # Safety
//
// Mutual exclusion rests on ZooKeeper's ordered, quorum-committed writes and
// on session expiry, and on these assumptions:
//
//   - this process's monotonic clock runs no more than 1% slower than the
//     ZooKeeper leader's over one session timeout;
//   - the server a Backend talks to is part of the quorum. A follower cut
//     off from its leader keeps answering pings for up to
//     syncLimit × tickTime before it drops its clients, while the leader may
//     expire the session after one session timeout; the Deadline cannot see
//     that, so keep syncLimit × tickTime well below the session timeout;
//   - nobody deletes a leader's znode by hand: that ends the term at the
//     store at once, and the leader learns it only through its watch.
//
// A process paused past its Deadline may still believe it leads: fence
// writes with [Backend.Guard] or the token.
package zookeeper
