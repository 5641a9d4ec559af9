// Package partition spreads n partitions of a group (queue shards, tenant
// ranges, cron buckets) over the live members of a service: each partition
// has exactly one owner at a time, fenced by a token of its own; the
// partitions are spread evenly; and as little as possible moves when members
// come and go.
//
//	a, err := partition.New(b, "orders", 64, &partition.Options{
//		Identity: "worker-3",
//		OnAssigned: func(ctx context.Context, p partition.Assignment) {
//			// Own p.Partition until ctx is done; send p.Token with writes.
//		},
//		OnRevoked: func(p partition.Assignment, reason error) { /* clean up */ },
//	})
//	if err != nil { ... }
//	err = a.Run(ctx) // joins, takes its share, hands over, rejoins … until ctx ends
//	a.Owned()        // the assignments held now
//
// It runs on any [backend.Backend] — redlock, etcd, zookeeper, memory — with
// the same behaviour, using only the driver contract: leases decide
// ownership; hashing only suggests placement.
//
//   - Ownership: partition p is the election [Election](group, p). Its
//     holder owns it; the election's tokens are the partition's fencing
//     tokens.
//   - Membership: each member holds one slot, an election group/m/k for a
//     free k below [Options.MaxMembers] (a joiner takes one of the lowest
//     free slots). The slot's lease is the member's liveness; its TTL is
//     half of [Options.TTL] (or TTL itself where the store refuses half),
//     so that a crashed member leaves the list before its partitions'
//     leases expire. Every member reads the slots in use each
//     [Options.PollInterval]; the contract has no way to list elections, so
//     slots stand in for a directory. A poll reads the slots in chunks of
//     16 up to the first chunk wholly free after the highest slot taken,
//     whatever the number of partitions: as many
//     Leader reads, or a few requests on a [backend.BatchReader] (Redlock:
//     one per node; etcd: one Txn, plus one per distinct lease; Kubernetes
//     Leases: one List of the namespace). On a
//     backend that implements [backend.Watcher] every member also watches
//     the slots the others hold, and reads the slots at once when one
//     changes holder (a leave, an expired slot); free slots are not
//     watched (on Redlock that is a poll), so a join is noticed at the
//     next poll.
//   - Placement: every member has a quota, n/members rounded up or down
//     ([Quotas]) — or, when members set an [Options.Weight], its share in
//     proportion to its weight ([QuotasWeighted]) — and computes [Place]
//     ([PlaceWeighted]) from the member list and who owns what as it knows
//     it: the placement it computed last, corrected by
//     what it holds. When the member list changes it places at once from
//     that, so that every member reaches the same placement without reading
//     anything, and the partitions that move are awaited by their new
//     owners before their old owners let them go. A member still short of
//     its quota a PollInterval after the change (a quarter of one up to 256
//     partitions) then reads every partition's holder (n Leader reads, or
//     a few requests on a BatchReader, in the background, every
//     PollInterval while it stays short up to 256 partitions, every 2-4
//     above, none while its campaigns fail)
//     and places again from that reading, counting as its own the free
//     partitions it is campaigning for. A joiner reads the holders once,
//     from the moment it starts, and campaigns only once that reading is
//     in; members starting together read none before they campaign. In
//     steady state no member reads holders.
//   - Hand-over: a member that owns a partition placed elsewhere cancels its
//     OnAssigned ctx, waits for OnAssigned to return (renewing the lease
//     meanwhile), then releases the lease; the new owner, already waiting in
//     its campaign, is elected at once.
//
// [ReadTable] reads who owns what, and each member's load, from the backend;
// `elect partitions` prints it.
//
// # Guarantees
//
//   - At most one owner per partition at a time, whatever the members
//     believe: two members that read different member lists (one has not
//     seen a join yet) may both campaign for a partition, but the backend
//     elects one. Disagreement costs balance or time, never safety.
//   - OnAssigned runs in its own goroutine with a ctx cancelled the moment
//     ownership ends: the partition is placed elsewhere, its lease is lost or
//     cannot be renewed in time (deadline minus [Options.SafetyMargin]), or
//     Run stops. OnRevoked runs exactly once per OnAssigned, after it
//     returned and the lease was released; a partition's next OnAssigned on
//     this member starts only after that.
//   - A partition handed over (moved or Run stopping) stays renewed until its
//     OnAssigned returns, so the next owner never starts while it still
//     acts; then it is released, so the next owner starts at once rather
//     than after a TTL. A partition is unowned at most for one hand-over.
//   - The library costs no goroutine per held partition: one loop decides
//     for every partition, and the leases run on the term engine that the
//     elector package's Elector uses too (one scheduler per Backend, one
//     goroutine watching the loss of up to 256 leases). A campaign in
//     flight holds a goroutine (the contract's Campaign blocks), and so do
//     a renewal while its request is in flight and OnAssigned while it
//     runs.
//
// # Fencing
//
// Every [Assignment] carries a Token, strictly increasing across the
// successive owners of its partition. A member paused after its last check
// (garbage collection, a VM migration) may still write after its partition
// moved: have the resource refuse, per partition, a token lower than the
// highest it has seen, using the driver's guard where the resource is the
// store itself (an etcd Txn comparison, a ZooKeeper multi check, the Redis
// fence script). Kafka added a per-partition epoch for the same reason
// (KIP-1251,
// https://kafka-options-explorer.conduktor.io/kip/1251).
//
// # Timing
//
//   - Start: a member campaigns once it has read the same member list in two
//     polls in a row, so members started together campaign once, for their
//     final share; a member joining a group whose partitions are all held
//     campaigns as soon as its first reading of the holders is in. A joiner
//     gives up a slot it sees another joiner win and tries another at once.
//     It keeps up to 256 campaigns in flight for partitions another member
//     holds, so that every partition it waits for is taken the moment its
//     old owner lets it go. Campaigns for partitions nobody holds (a cold
//     start) go through a window, as TCP's congestion window: 8 at first,
//     one more per campaign won, halved when a campaign fails — so that a
//     loaded store sees waves it can answer rather than a storm of
//     requests timing out and retried.
//   - Join: noticed by the others within PollInterval (default
//     min(TTL/3, 500 ms)); graceful leave: at once on a backend that
//     watches, else within PollInterval. A joiner reads the holders and waits in
//     the campaigns of the partitions the others shed; after a leave, the
//     others wait at once in the campaigns of the leaver's partitions that
//     the placement gives them. Either way the partitions that move are
//     owned by their new owners as soon as their old owners' OnAssigned have
//     returned.
//   - Crash: the dead member's slot expires about TTL/2 after its last
//     renewal, its partitions' leases about TTL after theirs; the others
//     notice the slot gone within PollInterval and wait in the campaigns of
//     its partitions, which they win as the leases expire — within TTL of
//     the crash, plus the store's own expiry granularity (etcd revokes
//     expired leases every 500 ms; ZooKeeper expires sessions per tick).
//     Under churn the members' lists can disagree, and each can leave a
//     dead member's partition to another that does not take it. So a
//     campaign waiting out a dead member's lease is kept, until that lease
//     must have ended (TTL + PollInterval), when a later change of the
//     member list places the partition elsewhere; a win is then held and
//     placed again like any held partition (kept within the quota, handed
//     over beyond). And a member short of its quota, up to 256 partitions,
//     reads a dead member's partition placed on another member again when
//     its lease ends (the TTL the driver reports; every PollInterval/4 when
//     it cannot tell), and reads every holder once it is free.
//   - Each lease is renewed as an Elector's is: RenewInterval (default
//     TTL/3) after the request that proved its deadline, so that leases a
//     driver renews with one request stay in step, and retried with backoff
//     before the step-down point after a failure. How many requests that
//     costs depends on the driver: etcd renews one lease per TTL for every
//     election, ZooKeeper one session; Redlock renews each key, in batches.
//
// # Placement
//
// [Place] is sticky: members keep what they hold up to their quota, and
// only the rest is placed, by rendezvous (highest-random-weight) hashing
// among the members below their quota. So the most loaded member holds
// ceil(n/members) — 103 for 1,024 partitions over 10 members (ideal 102.4);
// an 11th member joining takes its quota, 93, from the others and nothing
// moves between them; a member leaving hands over its own partitions and
// nothing else moves. A placement computed from the member list alone
// cannot do this: keeping every other partition in place when a member
// comes or goes forces rendezvous hashing, whose most loaded member carries
// 10-20 % more than the mean at this size (a binomial spread); hence the
// holders are read. Every member of a group must use the same n;
// identities must be unique within the group.
//
// Members of different sizes set [Options.Weight]: each member's quota is
// then its share n·w/W of the partitions (w its weight, W the sum of the
// weights), rounded down or up by largest remainders ([QuotasWeighted]),
// and [PlaceWeighted] keeps it sticky the same way. A member's weight
// travels with its membership slot, held under Identity + ";weight=" + w
// (under Identity alone for weight 1, as before weights), so every member
// computes the same placement; a slot whose holder ends in a malformed
// weight counts as a member of weight 1 named by the whole string.
//
// # Errors
//
// [New] validates its arguments and returns an error wrapping
// [backend.ErrInvalid] naming the field and the allowed range. [Assigner.Run]
// returns ctx.Err() unwrapped when its ctx ends, and an error wrapping
// [backend.ErrClosed] or [backend.ErrInvalid] when the backend fails
// permanently; transient errors are retried. The reason given to OnRevoked
// wraps [ErrMoved] (which wraps [elector.ErrResigned]), wraps
// [elector.ErrLeaseLost] with its cause, or is Run's ctx error.
package partition
