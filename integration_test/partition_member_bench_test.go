package integration_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/leaderkit/elector/partition"
)

// BenchmarkPartitionMember holds 1,024 partitions with one member on each
// backend (default TTL) and reports the steady state: the process's CPU in
// % of one core over two renew intervals (targets: at most 1 % on etcd and
// ZooKeeper, 3 % on Redlock), and the goroutines the member holds beyond
// the test's own at rest, and at most over one more interval, renewals
// included.
func BenchmarkPartitionMember(b *testing.B) {
	for _, s := range partStores()[1:] {
		b.Run(s.name, func(b *testing.B) {
			for range b.N { // one run is the measurement; N stays 1
				benchPartitionMember(b, s)
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

func benchPartitionMember(b *testing.B, s partStore) {
	const n = 1024
	ttl := partition.DefaultTTL
	interval := ttl / 3
	group := partGroup("member-" + s.name)
	g := newPartLedger(b)
	if s.name == "redlock" {
		b.ReportMetric(awaitRedisUptime(b, ttl).Seconds(), "node-wait-s")
	}
	base := runtime.NumGoroutine()
	began := time.Now()
	m := startPartMember(b, s, group, n, g.options("member-00", ttl))
	settleBalanced(b, g, group, n, []*partMember{m}, 2*time.Minute)
	b.ReportMetric(time.Since(began).Seconds(), "cold-start-s")
	time.Sleep(interval) // the cold start's renewals settle
	u0 := measure(false)
	time.Sleep(2 * interval)
	u1 := measure(false)
	rest := runtime.NumGoroutine() - base
	// Then the peak over one more interval, sampled apart from the CPU
	// measurement so that the sampling does not count in it.
	peak := 0
	for end := time.Now().Add(interval); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		peak = max(peak, runtime.NumGoroutine()-base)
	}
	b.ReportMetric(100*(u1.cpu-u0.cpu).Seconds()/u1.at.Sub(u0.at).Seconds(), "cpu-%")
	b.ReportMetric(float64(rest), "goroutines")
	b.ReportMetric(float64(peak), "goroutines-max")
	_ = m.stop()
}
