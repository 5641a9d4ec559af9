// Package compare measures backends side by side under one workload: what
// the command `elect compare` prints. It is internal to elect, not part of
// the library's API. It speaks to the drivers through the driver contract
// and, for what a driver reports beyond it (the kube driver's request
// count, rate limit and Forget), through backend.As on the driver's own
// exported methods; no driver interface exists for it.
//
// [Run] measures on every target, with the lease TTL of [Options.TTL]:
// [Acquire] (an uncontended Campaign and its Release), [Throughput],
// [Handover] (a Release to the election of a waiter on another client),
// [Renew] (with [RequestCount], the requests per held election per TTL/3,
// counted on the client's side; a rate-limited client holds only what half
// its rate renews, [Result.Held]), [Failover] (the holder cut off without a
// release; never shorter than the TTL), [Join] and [Leave] (a partition
// group's rebalance), and the TTL floor. Trials are interleaved across the
// targets, so the machine's load falls on all alike.
//
// A run campaigns only in elections under PrefixRoot/<random>/. Before Run
// returns, also when its ctx ends, it releases every lease, lets each
// Target's Cleanup remove what the store keeps (Redlock's counters and
// keys, migrate's markers, Leases through the kube driver's Forget) within
// [CleanupBound], and checks with Leader that none of its elections has a
// leader; the [Report] lists any left and what went wrong. A Report writes
// itself as a table, JSON, Markdown or an HTML page of latency CDFs.
package compare
