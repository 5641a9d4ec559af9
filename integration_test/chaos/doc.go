// Package chaos checks the elector's central promise — never two leaders
// acting at once, and a stale leader harmless — against every driver under
// the faults that break leader election in practice, Jepsen-style: run real
// processes, break things on a seeded schedule, record a history, check it.
//
// # Campaign
//
// A campaign ([Run], [Config]) runs one driver in one mode (Redlock with
// nodes on AOF and without, etcd, ZooKeeper, Kubernetes Leases) against the
// real test servers of scripts/servers.sh:
//
//   - Candidates are real OS processes (./candidate), three at a time, each
//     an Elector whose OnElected writes to the [Fence] with its term's
//     token every 20 ms and resigns after a random TTL/4..TTL so that terms
//     hand over often. Each write goes out 10 ms after the leader checked
//     its term (standing for reading and computing), and is not recalled
//     when the term ends meanwhile: a SIGSTOP that lands in between is
//     Kleppmann's pause, and the late write must be refused by the fence. Each reaches the backend through toxiproxy links of
//     its own. A process that dies is replaced by a new one (s<slot>g<gen>).
//   - The [Fence] is the protected resource, independent of the drivers: it
//     accepts a write only if its token is at least the highest it has
//     accepted, and records every write, accepted or refused.
//   - The nemesis draws a fault from [FaultKinds] with a seeded generator,
//     injects it, heals it, waits for a leader and a quiet spell, and again:
//     SIGKILL of the leader process; SIGSTOP of the leader for 1.5-2.5 TTL
//     then SIGCONT (a GC pause); a full cut, added latency or connection
//     resets on the leader's links; kill or pause of a minority or a
//     majority of the backend's nodes; for Redis, nodes killed and
//     restarted at once with AOF (appendfsync always) or empty; for the
//     kube campaign (TTL 3 s, the kube driver's MinTTL beside client-go),
//     SIGKILL of the kube-apiserver restarted after 1-2 TTL, its SIGSTOP
//     for 1-2 TTL, and ([UnderPrefix]) pauses of a minority or a majority
//     and kills of a minority of the etcd members under it.
//   - Modes ([ModeFaults], a campaign name's suffix): "-restarts" draws
//     only minority restarts, one or two of five nodes, at random and right
//     after a hand-over (within milliseconds of a term's start, when a
//     Redlock holder may hold a bare quorum); "-concurrent" draws two
//     overlapping faults: a minority restart during a leader pause, and a
//     cut of the new leader's links while a minority of nodes is paused,
//     right after a hand-over; "-clock" (Redlock only) moves the Redis
//     nodes' wall clocks: forward jumps of one or two nodes (at random,
//     right after a hand-over, and after staging a bare quorum) and a slew
//     within the drift factor (clock.go, scripts/clockshim.c).
//   - Partition mode ([ModePartitions], suffix "-partitions", e.g.
//     etcd-partitions): five candidates are members of one group of package
//     partition sharing 64 partitions under the default faults. Each
//     leaves the group gracefully after 5-15 TTL and joins again TTL/2-TTL
//     later, so partitions move cooperatively as well as after faults.
//     On taking a partition it writes to the fence at once with the
//     partition's token, to that partition's own resource, then every
//     TTL/4 (a fence refuses a stale token only once it has seen a newer
//     one).
//   - Migrate mode ([ModeMigrate], campaign migrate-<old>-<new>, e.g.
//     migrate-redis-etcd): five candidates lead one election through
//     package migrate while a runbook restarts them one at a time from
//     phase old to both, then to new; once a term of the new store's
//     epoch began (the marker is written), a late replica in phase old is
//     started and must be refused; then the candidates roll to done, a
//     process runs step 4 (Cleanup through a migrate+done URL) and checks
//     that the old store names no holder any more (a failure fails the
//     campaign), and the next migration starts on a fresh election with a
//     fresh fence resource. The nemesis hits the candidates, their links
//     to both stores, the new store's nodes, and ([OldFaults], kinds
//     prefixed "old-") the old store's: pauses of a minority and a
//     majority, and kills (Redis: restarts with AOF, which the marker
//     needs) of a minority. A migrate campaign runs until it has at least
//     -chaos.migrations full migrations (20 in the long campaign), given
//     90 s each.
//
// Every event carries CLOCK_MONOTONIC ([Mono]), which the candidates, the
// fence and the nemesis share on one machine, so the history orders them
// without clock skew. The seed fixes the schedule (fault kinds, targets,
// durations); the timings of the processes still vary from run to run.
//
// # Checker
//
// [Check] rebuilds the terms from the history and reports each
// [Violation] with the events around it:
//
//  1. Overlap: a term lasts from its elected event (OnElected began) to its
//     stepdown event (the term's ctx seen done, or Resign returned), the
//     kill of its process, or the SIGSTOP that froze it — a frozen process
//     does not act, and what it does after SIGCONT is a zombie's act that
//     fencing must contain. No two processes' terms may overlap.
//  2. Stale write: the fence must not accept a write from a term after a
//     later term of another process began (nor accept tokens out of
//     order). Refused writes are counted: they are fencing at work.
//  3. Recovery: after each fault heals, a leader must exist within
//     [Params.Bound] (3 TTL + 3 s here: covers a backend majority coming
//     back, its clients reconnecting and a lease lapsing), and no
//     leaderless spell longer than the bound may happen outside faults.
//  4. Token order: each term's token exceeds the previous term's.
//
// [CheckKeys] checks a partition or migrate campaign: every partition (or
// every migration, over its own span) is an election whose events carry a
// key, checked as above on its own with the faults every key shares. It
// adds, for partitions: a graceful hand-over (a partition moved, or its
// owner leaving) outside faults must be followed by the next owner within
// TTL, and a partition whose owner the nemesis killed must be owned again
// within TTL + 1 s; for migrations: the late old-only replica must report
// its refusal and never be elected. Tokens are compared as the fence sees
// them, so in a migration the check that tokens rise covers the switch
// from the old store's epoch to the new one's.
//
// # Safety
//
// Redlock's nodes that restart empty must stay out of quorums for a TTL,
// which the driver enforces itself, and a majority restarting empty loses
// the token counter (redlock/doc.go, # Safety). The redlock-noaof campaign
// breaks that on purpose (restart-majority-noaof); violations that follow
// that fault are marked documented and reported, not failed. Any other
// violation, including after minority restarts, fails the test.
//
// # Report
//
// [Rows] summarise a result per fault kind — terms, hand-overs, faults,
// overlaps, stale writes accepted and refused, worst and median time from
// a fault to the next election, worst recovery — printed by [WriteTable]
// and saved by [WriteJSON]; [WriteSVG] draws the leadership timeline per
// process with the faults shaded.
//
// `make test` runs a short campaign per driver (5 faults, 12 terms);
// scripts/chaos.sh (`make chaos`) a long one (100 faults, 300 terms; 20
// full migrations in a migrate campaign); CHAOS_CAMPAIGNS selects the
// partition and migrate campaigns, which neither runs by default.
package chaos
