// Package chaos checks the elector's central promise — never two leaders
// acting at once, and a stale leader harmless — against every driver under
// the faults that break leader election in practice, Jepsen-style: run real
// processes, break things on a seeded schedule, record a history, check it.
//
// # Campaign
//
// A campaign ([Run], [Config]) runs one driver in one mode against the real
// test servers of scripts/servers.sh. Candidates are OS processes
// (./candidate), each an Elector whose OnElected writes to the [Fence] with
// its term's token and resigns after a random TTL/4..TTL, reaching the
// backend through toxiproxy links of its own. The [Fence] accepts a write
// only if its token is at least the highest it has accepted, and records
// every write. The nemesis draws a fault from [FaultKinds] with a seeded
// generator (leader kills and pauses, cut or slow links, kills, pauses and
// restarts of backend nodes, the kube-apiserver and its etcd), injects it,
// heals it, and waits for a leader. Modes ([ModeFaults], [ModePartitions],
// [ModeMigrate], [ModePriority]) add restarts, overlapping faults, clock
// steps, partition groups, rolling migrations or candidates of mixed
// priorities. Events carry CLOCK_MONOTONIC ([Mono]); the
// seed fixes the schedule. In full: docs/chaos.md in the repository.
//
// # Checker
//
// [Check] rebuilds the terms from the history and reports each
// [Violation] with the events around it: two processes' terms that overlap
// (a term ends at its step-down, its process's kill or its SIGSTOP); a
// stale write the fence accepted; a term whose token does not exceed the
// previous one's; no leader within [Params.Bound] of a fault healing.
// [CheckKeys] checks every partition, or every migration, of a partition
// or migrate campaign as an election of its own, and adds the bounds of
// hand-overs and the refusal of the late old-only replica. [CheckPriority]
// adds a priority campaign's rules: no lower leader past its minimum term
// and a budget while a higher candidate is live, no yield for nothing. The
// rules in full: docs/chaos.md.
//
// # Safety
//
// A majority of Redlock nodes restarting empty loses the token counter, as
// the redlock package documents: violations after the redlock-noaof
// campaign's restart-majority-noaof fault are reported as documented, not
// failed. Any other violation fails the test.
//
// # Report
//
// [Rows] summarise a result per fault kind (terms, hand-overs, faults,
// overlaps, stale writes accepted and refused, times to the next election),
// printed by [WriteTable] and saved by [WriteJSON]; [WriteSVG] draws the
// leadership timeline with the faults shaded. `make test` runs a short
// campaign per driver; scripts/chaos.sh (`make chaos`) a long one;
// CHAOS_CAMPAIGNS selects the partition and migrate campaigns.
package chaos
