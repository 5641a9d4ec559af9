package integration_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
//   - node-wait-s (Redlock): how long the benchmark waited, before the cold
//     start, for the Redis nodes to have been up for the TTL, after which
//     a node without persistence counts toward quorums (the driver's
//     delayed restarts; 0 on nodes up for longer);
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
//     to all its partitions owned again, against TTL + 1 s = 16 s;
//   - steady-req/s: requests per second the servers receive once the 10
//     members hold their 1,024 partitions (see partRequests), over two
//     renew intervals after one; steady-req/s-128: the same with 128
//     partitions; steady-ratio: the first over the second (target about
//     1: the requests do not grow with the partitions held).
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
	if s.name == "redlock" {
		// Cold start measures the partition layer, not the driver's
		// delayed restarts: nodes without persistence that have been up
		// for less than the longest TTL count toward no quorum (redlock
		// package doc, Safety), so on nodes started just before the
		// benchmark every campaign waits out the rest of the 15 s TTL.
		b.ReportMetric(awaitRedisUptime(b, ttl).Seconds(), "node-wait-s")
	}
	var ms []*partMember
	began := time.Now()
	for i := range members {
		ms = append(ms, startPartMember(b, s, group, n, opts(fmt.Sprintf("member-%02d", i))))
	}
	want := settleBalanced(b, g, group, n, ms, 2*time.Minute)
	b.ReportMetric(time.Since(began).Seconds(), "cold-start-s")
	b.ReportMetric(float64(maxLoad(want)), "max-load")
	requests := partRequests(b, s)
	steady := steadyRate(requests, ttl/3, 2*ttl/3)
	b.ReportMetric(steady, "steady-req/s")

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

	// The same 10 members' steady state with an eighth of the partitions
	// each: shared sessions make the requests independent of the
	// partitions held.
	const small = n / 8
	gs := newPartLedger(b)
	groupSmall := partGroup("bench-small-" + s.name)
	ms = nil
	for i := range members {
		id := fmt.Sprintf("member-%02d", i)
		ms = append(ms, startPartMember(b, s, groupSmall, small, gs.options(id, ttl)))
	}
	settleBalanced(b, gs, groupSmall, small, ms, 2*time.Minute)
	steadySmall := steadyRate(requests, ttl/3, 2*ttl/3)
	for _, m := range ms {
		_ = m.stop()
	}
	b.ReportMetric(steadySmall, "steady-req/s-128")
	b.ReportMetric(steady/steadySmall, "steady-ratio")
}

// partRequests returns a cumulative count of the requests the servers of s
// have received: Redis script calls per node (a renewal is one, however
// many leases it renews; INFO excluded), etcd gRPC messages summed over
// members, ZooKeeper packets summed over servers (session pings included).
func partRequests(tb testing.TB, s partStore) func() float64 {
	switch s.name {
	case "redlock":
		return redisCommands(tb, true)
	case "etcd":
		return etcdMessages(tb, func(string) bool { return true })
	case "zookeeper":
		return zkPackets(tb)
	}
	tb.Fatalf("no request counter for store %q", s.name)
	return nil
}

// steadyRate lets settle pass, then returns the requests per second that
// count reports over window.
func steadyRate(count func() float64, settle, window time.Duration) float64 {
	time.Sleep(settle)
	before := count()
	time.Sleep(window)
	return (count() - before) / window.Seconds()
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

// awaitRedisUptime waits until every test Redis node has been up for ttl
// (a wall-clock condition on the servers, read from INFO server), and
// returns how long it waited.
func awaitRedisUptime(tb testing.TB, ttl time.Duration) time.Duration {
	tb.Helper()
	var wait time.Duration
	for _, c := range redlockClients(tb) {
		info, err := c.Info(context.Background(), "server").Result()
		if err != nil {
			tb.Fatalf("INFO server: %v", err)
		}
		var secs int64 = -1
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
				secs, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		if secs < 0 {
			tb.Fatalf("INFO server has no uptime_in_seconds: %q", info)
		}
		// Uptime is in whole seconds, rounded down: a second more.
		wait = max(wait, ttl+time.Second-time.Duration(secs)*time.Second)
	}
	time.Sleep(wait)
	return wait
}
