// Package compare measures backends side by side under one workload: what
// the command `elect compare` prints. It is internal to elect, not part of
// the library's API. It speaks to the drivers through the driver contract
// and, for what a driver reports beyond it (the kube driver's request
// count, rate limit and Forget), through backend.As on the driver's own
// exported methods; no driver interface exists for it.
//
//	var targets []compare.Target
//	for _, u := range []string{"redis://r1,r2,r3", "etcd://e1,e2,e3", "zk://z1,z2,z3"} {
//		t, err := compare.URLTarget(u, nil) // the drivers must be imported
//		if err != nil { ... }
//		targets = append(targets, t)
//	}
//	rep, err := compare.Run(ctx, targets, compare.Short())
//	if err != nil { ... }
//	rep.WriteTable(os.Stdout)
//
// # Workloads
//
// [Run] measures, on every target, with the lease TTL of [Options.TTL]:
//
//   - [Acquire]: an uncontended Campaign and its Release;
//   - [Throughput]: Concurrency goroutines on as many elections, each
//     campaigning and releasing in a loop;
//   - [Handover]: from a holder's Release to the election of a candidate
//     waiting on another client;
//   - [Renew]: the latency of Renew while Held elections are held on one
//     client and all are renewed every TTL/3, the renewals per second that
//     client sustained, and ([RequestCount]) the requests it sent per held
//     election per TTL/3, counted on the client's side where the target can
//     ([Target.OpenCounted], or a driver that counts its own requests, as
//     kube's Requests does): no server statistics, so no admin rights. On
//     a client that limits its own request rate (a kube:// client's qps,
//     its driver's RequestRate) it holds only as many elections as half that
//     rate renews every TTL/3, one request each ([Result.Held]), and the
//     report says so: more would measure the client's limiter, and lose
//     leases;
//   - [Failover]: the holder's client is cut off from the store without a
//     release (its connections closed at once, new ones closed as they come, as when its
//     process dies); from its last renewal to the election of a candidate
//     waiting on another client. It is never shorter than the TTL;
//   - [Join] and [Leave]: Members members of a partition group (package
//     partition) own Partitions partitions; the time until every partition
//     is owned as placed after one more member starts, and after it leaves;
//   - the TTL floor: the shortest of [Options.FloorTTLs] the backend grants
//     (Campaign refuses the others with backend.ErrInvalid).
//
// Trials are interleaved: trial i runs on every target before trial i+1
// runs on any, each round starting with a different target, so that the
// load of the machine (which the numbers include) falls on all alike.
//
// # Safety of a run
//
// A run campaigns only in elections named PrefixRoot/<random>/…, a prefix
// no other run shares, inside whatever prefix or root the backend URL sets;
// it reads and writes nothing else and needs no permission beyond what a
// candidate of those elections needs. Before Run returns, also when its ctx
// ends, it releases every lease it holds, closes its clients, lets each
// Target's Cleanup remove what the store keeps (Redlock's fencing counters
// and lock keys, the markers a migrate URL in phase new writes), waits for
// the leases of cut-off holders that Cleanup could not remove to lapse (at
// most 20 seconds), and checks with Leader that none of its elections has a
// leader; the report lists any that still have one, and what went wrong.
// The cleanup is bounded by [CleanupBound] whatever the TTL; its requests
// pass the clients' rate limiters, and one that fails transiently (a
// limiter that would wait past the bound, a slow store) is tried again
// within it. ZooKeeper's empty parent znodes are container nodes, which
// the servers delete on their own; a backend that keeps a record of every
// election (a Kubernetes Lease object, removed by the kube driver's Forget) has the records
// of the run's elections removed before the check.
//
// # Output
//
// A [Report] writes itself as a text table ([Report.WriteTable], systems as
// columns, p50/p95/p99/max and errors per workload, then each backend's
// fencing-token source, safety assumptions and TTL floor), as JSON
// ([Report.WriteJSON]), as a Markdown table ([Report.WriteMarkdown]) and as
// a self-contained HTML page with a CDF plot per workload
// ([Report.WriteHTML]).
//
// The numbers include the client machine's own load and the network
// between it and the servers; compare runs made on the same machine at the
// same time, which is what interleaving is for.
package compare
