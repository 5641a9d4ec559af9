package kube

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
	"github.com/leaderkit/elector/partition"
)

// BenchmarkPartitionMemberRate runs a partition group on Leases (3
// members, TTL [MinTTL], each member's client limited by a [RateLimiter]:
// the default qps 50 for 64 partitions; qps 250 for 512, since a member's
// share, some 171 Leases renewed every second, needs more than 90% of the
// default) and reports a member's requests per second over 10 s of steady
// state, then over the 10 s after an apiserver restart (scripts/servers.sh
// restart kube 1) returned. Run on a quiet machine:
//
//	cd kube && go test -run '^$' -bench BenchmarkPartitionMemberRate -benchtime 1x
func BenchmarkPartitionMemberRate(b *testing.B) {
	for _, tc := range []struct {
		n          int
		qps, burst int
	}{{64, defaultQPS, defaultBurst}, {512, 250, 500}} {
		b.Run(fmt.Sprintf("partitions=%d", tc.n), func(b *testing.B) {
			for range b.N {
				steady, recovery := memberRate(b, tc.n, float32(tc.qps), tc.burst)
				b.ReportMetric(steady, "req/s/member-steady")
				b.ReportMetric(recovery, "req/s/member-recovery")
			}
		})
	}
}

// memberRate runs the group of memberRate's benchmark and returns a
// member's mean requests per second, steady and after a restart.
func memberRate(b *testing.B, n int, qps float32, burst int) (steady, recovery float64) {
	s := testServer(b)
	group := testName(b)
	g := newPartLedger(b)
	ids := []string{"m0", "m1", "m2"}
	var backends []*Backend
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, id := range ids {
		p := testproxy.New(b, s.addr())
		cfg := rest.CopyConfig(s.cfg)
		cfg.Host = "https://" + p.Addr()
		cfg.RateLimiter = NewRateLimiter(qps, burst)
		cli, err := coordinationv1client.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		kb, err := New(cli, s.ns, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = kb.Close() })
		backends = append(backends, kb)
		o := g.options(id)
		o.TTL = MinTTL
		a, err := partition.New(kb, group, n, o)
		if err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx) })
	}
	g.settle(n, ids, 2*time.Minute)
	count := func() int64 {
		var sum int64
		for _, kb := range backends {
			r, _ := kb.Requests()
			sum += r
		}
		return sum
	}
	window := 10 * time.Second
	wait := func() {
		t := time.NewTimer(window)
		<-t.C
	}
	before := count()
	wait()
	steady = float64(count()-before) / window.Seconds() / float64(len(ids))
	testenv.Fault(b, "restart", "kube", "1")
	before = count()
	wait()
	recovery = float64(count()-before) / window.Seconds() / float64(len(ids))
	g.settle(n, ids, time.Minute)
	return steady, recovery
}
