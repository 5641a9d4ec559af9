package integration_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leaderkit/elector/partition"
)

// BenchmarkPartitions measures partition assignment against the real
// servers at the scale of the targets: 1,024 partitions over 10 members,
// default TTL (15 s). One iteration is the whole scenario; run it with
// -benchtime=1x:
//
//	go test -run '^$' -bench BenchmarkPartitions -benchtime=1x -timeout 30m .
//
// It reports:
//   - cold-start-s: from starting 10 members to all 1,024 partitions owned
//     as placed;
//   - max-load: the most partitions on one member then;
//   - join-moved, leave-moved: partitions moved when an 11th member joins,
//     and when it leaves again;
//   - moved-among-others: partitions the join or the leave moved between
//     the 10 others (target 0);
//   - extra-moves/op: assignments beyond those the placement moves, per
//     join or leave (a member still on the old member list won a partition
//     during its hand-over, then handed it on);
//   - rebalance-p50-ms, rebalance-p99-ms: over 5 joins and 5 graceful
//     leaves, from the change to every partition owned by its placed owner
//     (after a leave: the others keep theirs, and the leaver's are owned by
//     them, each at its quota; see settleLeave);
//   - crash-s: from a member's crash (its connections die, its leases stay)
//     to all its partitions owned again, against TTL + 1 s = 16 s.
func BenchmarkPartitions(b *testing.B) {
	for _, s := range partStores()[1:] {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				benchPartitions(b, s)
			}
		})
	}
}

func benchPartitions(b *testing.B, s partStore) {
	const (
		n       = 1024
		members = 10
		rounds  = 5
	)
	ttl := partition.DefaultTTL
	group := partGroup("bench-" + s.name)
	g := newPartLedger(b)
	tr := newPartTrace()
	opts := func(id string) *partition.Options { return tr.options(id, g.options(id, ttl)) }
	var ms []*partMember
	began := time.Now()
	for i := range members {
		ms = append(ms, startPartMember(b, s, group, n, opts(fmt.Sprintf("member-%02d", i))))
	}
	want := settleBalanced(b, g, group, n, ms, 2*time.Minute)
	b.ReportMetric(time.Since(began).Seconds(), "cold-start-s")
	b.ReportMetric(float64(maxLoad(want)), "max-load")

	var times latencies
	var slowJoin, slowLeave func()
	var slowJoinT, slowLeaveT time.Duration
	var joinMoved, leaveMoved, others, extra int
	for r := range rounds {
		count := g.assignments()
		start := time.Now()
		joiner := startPartMember(b, s, group, n, opts(fmt.Sprintf("joiner-%d", r)))
		joined := placed(group, n, append(slices.Clone(ms), joiner), want)
		settle(b, g, joined, time.Minute)
		took := time.Since(start)
		times = append(times, took)
		if took > slowJoinT {
			start, before, took := start, want, took
			slowJoinT, slowJoin = took, func() { tr.report(b, "slowest join", start, took, before, joined) }
		}
		extra += g.assignments() - count - diff(want, joined)
		joinMoved = diff(want, joined)

		count = g.assignments()
		start = time.Now()
		if err := joiner.stop(); err != context.Canceled {
			b.Errorf("joiner's Run returned %v; want context.Canceled", err)
		}
		left := settleLeave(b, g, group, n, ms, joined, time.Minute)
		took = time.Since(start)
		times = append(times, took)
		if took > slowLeaveT {
			start, before, took := start, joined, took
			slowLeaveT, slowLeave = took, func() { tr.report(b, "slowest leave", start, took, before, left) }
		}
		extra += g.assignments() - count - diff(joined, left)
		leaveMoved = diff(joined, left)
		others = 0
		for p := range want {
			if joined[p] != left[p] && joined[p] != joiner.id {
				others++
			}
			if want[p] != joined[p] && joined[p] != joiner.id {
				others++ // the join moved it between old members
			}
		}
		want = left
	}
	times.report(b, "rebalance")
	b.ReportMetric(float64(slices.Max(times).Milliseconds()), "rebalance-max-ms")
	slowJoin()
	slowLeave()
	b.ReportMetric(float64(joinMoved), "join-moved")
	b.ReportMetric(float64(leaveMoved), "leave-moved")
	b.ReportMetric(float64(others), "moved-among-others")
	b.ReportMetric(float64(extra)/(2*rounds), "extra-moves/op")

	ms[0].crash()
	crashed := time.Now()
	ms = ms[1:]
	settleLeave(b, g, group, n, ms, want, ttl+time.Minute)
	b.ReportMetric(time.Since(crashed).Seconds(), "crash-s")
	for _, m := range ms {
		_ = m.stop()
	}
}

func maxLoad(owners []string) int {
	load := map[string]int{}
	most := 0
	for _, id := range owners {
		load[id]++
		most = max(most, load[id])
	}
	return most
}
