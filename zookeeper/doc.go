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
// Importing this package registers the schemes zk and zks (TLS, on
// ZooKeeper's secureClientPort) with package backendurl, whose
// documentation states the rules every scheme shares:
//
//	zk://[user:password@]host:port[,host:port...][?params]
//
// The hosts are the servers of one ensemble; the port defaults to 2181; a
// URL has no path. Parameters: prefix (Options.Prefix, default
// "/elector"), disconnect_grace (Options.DisconnectGrace, default 0),
// drift_factor (Options.DriftFactor, default 0.01). A user and password
// add digest authentication and a digest ACL for that user alone (see
// Security). For example:
//
//	zks://billing:secret@10.0.0.1,10.0.0.2,10.0.0.3:2281?prefix=/billing&ca=/etc/elect/ca.pem&cert=/etc/elect/client.pem&key=/etc/elect/client.key
//
// # Layout
//
// A candidate in election E creates the EPHEMERAL_SEQUENTIAL znode
// <Options.Prefix>/E/_c_<uuid>-latch-<seq> holding its identity: what
// LeaderLatch on latch path <Options.Prefix>/E writes. Missing parents are
// container nodes, removed by the server once empty. Candidates sort by
// the text after the last "latch-"; the first leads, provided its
// ephemeralOwner is its creator's current session (Curator's CURATOR-696
// check). Each waiting candidate watches only its predecessor. So a
// LeaderLatch reports an elector leader and queues behind it, and the
// other way round. The create is protected (Curator's withProtection), and
// a znode nobody will use is deleted in the background as soon as the
// session is reachable. Children of E that are not candidates are ignored,
// so election "a/b" does not disturb "a" (Curator counts them: keep child
// elections out of latch paths shared with Curator).
//
// # Fencing
//
// The token of a term is the czxid of its candidate znode, ensemble-wide
// and increasing, so a successor's token is greater. [Backend.Guard]
// returns a check operation for zk.Conn.Multi that commits the multi's
// writes only while the term's znode exists, that is while the term is
// current at the store: stronger than the redlock driver's Fence, which
// only refuses writes once a newer term has written to the same resource.
//
// # Timing
//
// [backend.Lease.Deadline] is [backend.LeaseDeadline] of a basis and the
// TTL, less TTL × [Options.DriftFactor] (1% by default) plus 2 ms. The basis
// is the send time of the newest answered request that the ensemble's
// leader must have counted, which trails the newest answer by the report
// lag, [Timing.ReportLag]: (syncLimit + 1) × tickTime + 100 ms, or TTL/4 if
// longer. A crashed leader's successor is elected between one TTL
// and one TTL plus a tick after its last packet. No option bounds a single
// request (go-zookeeper's requests take no context); a call still returns
// when its ctx ends, and a new session's handshake is awaited at most 3 s.
//
// A disconnected session (go-zookeeper drops one silent for two thirds of
// the TTL) ends its leases at once (Curator's policy: SUSPENDED means not
// leader), unless [Options.DisconnectGrace] lets them ride it out for that
// long; an expired one ends them, and a waiting
// Campaign returns [backend.ErrLost]. Close ends every session, so waiting
// candidates elsewhere are elected at once.
//
// # Safety
//
// Mutual exclusion rests on ZooKeeper's ordered, quorum-committed writes
// and on session expiry, and on these assumptions:
//
//   - this process's monotonic clock runs no more than DriftFactor slower
//     than the ZooKeeper leader's over one TTL;
//   - the ensemble's tickTime and syncLimit are at most those the Backend
//     works with ([Backend.Timing]): [Options.TickTime] and
//     [Options.SyncLimit], else the servers' conf four-letter word, else
//     ZooKeeper's sample configuration. Raise the stated values before the
//     ensemble's;
//   - packets between the ensemble's servers arrive within 100 ms, or are
//     lost;
//   - tickTime is at most half the shortest TTL (true of every TTL granted
//     under the default minSessionTimeout);
//   - nobody deletes a leader's znode by hand: that ends the term at the
//     store at once, and the leader learns it only through its watch.
//
// A process paused past its Deadline may still believe it leads: fence
// writes with [Backend.Guard] or the token.
//
// # Security
//
// Without [Options.Auth] or [Options.ACL] (or URL credentials) every znode
// is world:anyone with all permissions, Curator's default: any client of
// the ensemble can delete the leader's znode. With Options.Auth and no ACL,
// znodes are creator-only, reads included, so every participant (Curator
// peers, `elect status`) must authenticate as the creator; Options.ACL is
// used as given; Backends of one election should share one ACL. Digest
// credentials travel in clear unless [Options.TLS] (a zks:// URL) is set.
//
// # Errors
//
// Invalid options, TTLs (outside [MinTTL]..[MaxTTL], below [MinSafeTTL],
// not granted as asked, or shorter than twice DisconnectGrace; each error
// names the numbers) and election names ZooKeeper paths cannot hold (beyond
// [backend.ValidateElection]: U+007F-U+009F, U+D800-U+F8FF, U+FFF0-U+FFFF,
// characters outside the Basic Multilingual Plane, segments starting with
// "_c_") wrap [backend.ErrInvalid]. Calls after Close wrap
// [backend.ErrClosed]; a lease known to be gone wraps [backend.ErrLost];
// Leader of an election without candidates wraps [backend.ErrNoLeader].
// Context errors are returned unwrapped. Other errors are transient; one
// that reaches no server names the servers and the last connection
// problem.
package zookeeper
