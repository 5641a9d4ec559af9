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
// It runs on any [backend.Backend], using only the driver contract: leases
// decide ownership; hashing only suggests placement. Partition p is the
// election [Election](group, p), whose tokens fence it. Each member holds a
// membership slot, an election group/m/k with half the TTL (the TTL where
// the store refuses half), so a crashed member leaves the list before its
// partitions' leases expire. Every member computes the same placement from
// the member list and who owns what, and new owners wait in the campaigns
// of the partitions that move. [ReadTable] reads who owns what; `elect
// partitions` prints it. How members reach one placement, and what they
// read when: https://github.com/leaderkit/elector/blob/main/docs/design/partition.md.
//
// # Guarantees
//
//   - At most one owner per partition at a time, whatever the members
//     believe: members with different member lists may both campaign for a
//     partition, but the backend elects one. Disagreement costs balance or
//     time, never safety.
//   - OnAssigned runs in its own goroutine with a ctx cancelled the moment
//     ownership ends (the partition moved, its lease was lost or could not
//     be renewed by deadline minus [Options.SafetyMargin], or Run stopped).
//     OnRevoked runs exactly once per OnAssigned, after it returned and the
//     lease was released; the partition's next OnAssigned here starts after.
//   - A partition handed over stays renewed until its OnAssigned returns,
//     then is released, so the next owner starts at once: a partition is
//     unowned at most for one hand-over.
//   - No goroutine per held partition: leases run on the Elector's term
//     engine. A campaign, a renewal in flight and OnAssigned hold one each.
//
// # Fencing
//
// Every [Assignment] carries a Token, strictly increasing across the
// successive owners of its partition. A member paused after its last check
// may still write after its partition moved: have the resource refuse, per
// partition, a token lower than the highest it has seen, using the
// driver's Guard or Fence where the resource is the store itself.
//
// # Timing
//
// Members started together campaign once, for their final share (a member
// campaigns once two polls in a row read the same member list). A join is
// noticed within [Options.PollInterval] (default min(TTL/3, 500 ms)); a
// graceful leave at once on a backend with [backend.Watcher], else within
// PollInterval; moved partitions are owned anew as soon as their old
// owners' OnAssigned have returned. A crashed member's partitions are
// taken over as their leases expire: within TTL of the crash, plus the
// store's expiry granularity. Leases renew every RenewInterval (TTL/3).
//
// # Placement
//
// Every member has a quota, n/members rounded up or down ([Quotas]), or
// with [Options.Weight] its share n·w/W ([QuotasWeighted]). [Place] and
// [PlaceWeighted] are sticky: members keep what they hold up to their
// quota, and the rest is placed by rendezvous hashing among the members
// below quota, so a joiner takes only its quota and a leaver hands over
// only its own partitions. Every member of a group must use the same n and
// a unique identity; a weight travels with the slot, held under Identity +
// ";weight=" + w (Identity alone for weight 1).
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
