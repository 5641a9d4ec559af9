// Package zookeeper is the ZooKeeper driver of elector: leader elections
// stored as ephemeral sequential znodes in a ZooKeeper ensemble (3.5.3 or
// later), in the format of Apache Curator's LeaderLatch, so that Java
// services using Curator and Go services using elector share one election.
//
//	b, _ := zookeeper.New([]string{"zk1:2181", "zk2:2181", "zk3:2181"}, nil)
//	defer b.Close()
//	e, _ := elector.New(b, "send-invoices", &elector.Options{TTL: 40 * time.Second, OnElected: lead})
//
// A lease's TTL is the timeout of a session the [Backend] owns (one
// zk.Conn per distinct Candidate.TTL, shared by its candidates and leases),
// and must be at least [MinSafeTTL] of the ensemble's tickTime and
// syncLimit: 30.25s on ZooKeeper's sample configuration (tickTime 2s,
// syncLimit 5), 6.5s with tickTime 500ms and syncLimit 4. Why, and how
// sessions, renewals and deadlines work:
// https://github.com/leaderkit/elector/blob/main/docs/design/zookeeper.md.
//
// # URLs
//
// Importing this package registers zk and zks (TLS, on the
// secureClientPort) with package backendurl, which states the shared rules:
//
//	zk://[user:password@]host:port[,host:port...][?params]
//
// The hosts are one ensemble's servers (port 2181 by default); no path.
// Parameters: prefix (Options.Prefix, default "/elector"),
// disconnect_grace (Options.DisconnectGrace, default 0), drift_factor
// (Options.DriftFactor, default 0.01), tick_time and sync_limit
// (Options.TickTime and SyncLimit, for an ensemble that does not answer
// conf). A user and password add digest
// authentication and an ACL for that user alone. For example:
//
//	zks://billing:secret@10.0.0.1,10.0.0.2,10.0.0.3:2281?prefix=/billing&ca=/etc/elect/ca.pem&cert=/etc/elect/client.pem&key=/etc/elect/client.key
//
// # Layout
//
// A candidate in election E creates the EPHEMERAL_SEQUENTIAL znode
// <Options.Prefix>/E/_c_<uuid>-latch-<seq> holding its identity, as
// LeaderLatch on latch path <Options.Prefix>/E does; parents are container
// nodes. Candidates sort by the text after "latch-"; the first leads if its
// ephemeralOwner is its creator's current session (CURATOR-696); each
// waiting candidate watches only its predecessor. So LeaderLatch and
// elector queue behind each other. Creates are protected (withProtection),
// and an unused znode is deleted in the background. Children that are not
// candidates are ignored, so election "a/b" does not disturb "a" (Curator
// counts them: keep child elections out of latch paths shared with it).
//
// The registry of candidates with a priority ([backend.Registry], for
// preferred leaders) keeps one ephemeral sequential znode per candidate
// under <Options.Prefix>/_c_candidates/E, on the session of the candidate's
// TTL, created protected as candidates are; it is no latch path, so a
// LeaderLatch never counts an entry.
//
// # Fencing
//
// The token of a term is the czxid of its candidate znode, ensemble-wide
// and increasing. [Backend.Guard] returns a check operation for
// zk.Conn.Multi that commits the multi's writes only while the term's
// znode exists, that is while the term is current at the store.
//
// # Timing
//
// A lease's Deadline is basis + TTL − (TTL × [Options.DriftFactor] + 2 ms)
// ([backend.LeaseDeadline]; DriftFactor 1% by default), the basis being the
// send time of the newest answered request the ensemble's leader must have
// counted: it trails the newest answer by [Timing.ReportLag], (syncLimit +
// 1) × tickTime + 100 ms or TTL/4 if longer. A crashed leader's successor is
// elected one TTL to one TTL plus a tick after its last packet. A
// disconnected session (go-zookeeper drops one silent for two thirds of
// the TTL) ends its leases at once, Curator's policy, unless
// [Options.DisconnectGrace] lets them ride it out; an expired one ends
// them. Close ends every session, so others are elected at once. No option
// bounds a request (go-zookeeper's take no context); calls still return
// when their ctx ends, and a handshake is awaited at most 3 s.
//
// # Safety
//
// Mutual exclusion rests on ZooKeeper's ordered, quorum-committed writes
// and on session expiry, and on these assumptions:
//
//   - this process's monotonic clock runs at most DriftFactor slower than
//     the ZooKeeper leader's over one TTL;
//   - the ensemble's tickTime and syncLimit are at most those the Backend
//     works with ([Backend.Timing]): [Options.TickTime] and
//     [Options.SyncLimit], else the servers' conf four-letter word, else
//     ZooKeeper's sample configuration (raise the stated values first);
//   - packets between the servers arrive within 100 ms, or are lost;
//   - tickTime is at most half the shortest TTL (true under the default
//     minSessionTimeout);
//   - nobody deletes a leader's znode by hand (see Security): that ends
//     the term at once, and the leader learns it only through its watch.
//
// A process paused past its Deadline may still believe it leads: fence
// writes with [Backend.Guard] or the token.
//
// # Security
//
// Without [Options.Auth] or [Options.ACL] (or URL credentials) every znode
// is world:anyone, Curator's default: any client can delete a leader's
// znode. With Auth, znodes are creator-only, reads included, so every
// participant (Curator peers, `elect status`) must authenticate alike.
// Digest credentials travel in clear unless [Options.TLS] (zks://) is set.
//
// # Errors
//
// Invalid options, TTLs (outside [MinTTL]..[MaxTTL], below [MinSafeTTL],
// not granted as asked, or under twice DisconnectGrace; the error names the
// numbers) and names ZooKeeper paths cannot hold (beyond
// [backend.ValidateElection]: U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF,
// characters outside the BMP, segments starting with "_c_") wrap
// [backend.ErrInvalid]. Calls after Close wrap [backend.ErrClosed]; a lease
// known to be gone wraps [backend.ErrLost]; Leader of an election without
// candidates wraps [backend.ErrNoLeader]. Context errors are returned
// unwrapped. Other errors are transient; one that reaches no server names
// the servers and the last connection problem.
package zookeeper
