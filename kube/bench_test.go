package kube

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leaderkit/elector/internal/testproxy"
)

// The benchmarks compare this driver with client-go's leaderelection on
// the same apiserver, each side with its usual timing scaled to the tests'
// (client-go: LeaseDuration 3 s, RenewDeadline 2 s, RetryPeriod 200 ms;
// elector: TTL 3 s, the same lease). Timings need a quiet machine:
//
//	cd kube && go test -run '^$' -bench . -benchtime 20x

// reportQuantiles reports the median and 90th percentile of d.
func reportQuantiles(b *testing.B, d []time.Duration, unit string) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "ms-p50/"+unit)
	b.ReportMetric(float64(d[len(d)*9/10].Microseconds())/1000, "ms-p90/"+unit)
}

// Graceful hand-over: the holder releases; time until the waiting
// candidate leads.
func BenchmarkHandover(b *testing.B) {
	s := testServer(b)
	b.Run("elector", func(b *testing.B) {
		x, y := testBackend(b, s, nil), testBackend(b, s, nil)
		name := testName(b)
		var took []time.Duration
		holder := mustCampaign(b, x, backendCand(name, "x", goLeaseDuration))
		for b.Loop() {
			ch := campaignAsync(testCtx(b), y, backendCand(name, "y", goLeaseDuration))
			pending(b, ch, 50*time.Millisecond) // the waiter is watching
			released := time.Now()
			if err := holder.Release(testCtx(b)); err != nil {
				b.Fatal(err)
			}
			r := await(b, ch, 5*time.Second)
			if r.err != nil {
				b.Fatal(r.err)
			}
			took = append(took, r.at.Sub(released))
			holder = r.l.(*lease)
			x, y = y, x
		}
		_ = holder.Release(testCtx(b))
		reportQuantiles(b, took, "handover")
	})
	b.Run("client-go", func(b *testing.B) {
		name := testName(b)
		var took []time.Duration
		holder := runClientGoT(b, s, name, "g0")
		if !holder.leads(5 * time.Second) {
			b.Fatal("client-go did not lead a free Lease")
		}
		i := 1
		for b.Loop() {
			waiter := runClientGoT(b, s, name, "g"+string(rune('0'+i%10)))
			i++
			if waiter.leads(goRetryPeriod) {
				b.Fatal("client-go waiter led while the Lease was held")
			}
			released := time.Now()
			holder.stop() // ReleaseOnCancel
			if !waiter.leads(5 * time.Second) {
				b.Fatal("client-go waiter did not take over")
			}
			took = append(took, waiter.at.Sub(released))
			holder = waiter
		}
		holder.stop()
		reportQuantiles(b, took, "handover")
	})
}

// warmUp makes 50 updates of a Lease of its own, on a client of its own,
// before a benchmark's sub-benchmarks: otherwise the one that runs first
// (elector's) also pays for the first requests of the process, and is
// slower whichever side it is.
func warmUp(b *testing.B, s server) {
	b.Helper()
	cli, _ := s.loggedClient(b)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: testName(b) + "-warm-up", Namespace: s.ns},
		Client:     cli,
		LockConfig: resourcelock.ResourceLockConfig{Identity: "warm-up"},
	}
	now := metav1.Now()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "warm-up", LeaseDurationSeconds: 1, AcquireTime: now, RenewTime: now}
	if err := lock.Create(testCtx(b), rec); err != nil {
		b.Fatal(err)
	}
	for range 50 {
		rec.RenewTime = metav1.Now()
		if err := lock.Update(testCtx(b), rec); err != nil {
			b.Fatal(err)
		}
	}
}

// Acquire and release a free election. Each side makes its terms on one
// client, and one term before the timed ones: the connection is open, and
// the elector Backend's watch of the namespace's Leases, started by its
// first lease, is answered.
func BenchmarkAcquireRelease(b *testing.B) {
	s := testServer(b)
	warmUp(b, s)
	b.Run("elector", func(b *testing.B) {
		cli, log := s.loggedClient(b)
		kb, err := New(cli, s.ns, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = kb.Close() })
		name := testName(b)
		term := func() {
			l, err := kb.Campaign(testCtx(b), backendCand(name, "x", goLeaseDuration))
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(testCtx(b)); err != nil {
				b.Fatal(err)
			}
		}
		term()
		log.awaitWatch(b, 5*time.Second)
		for b.Loop() {
			term()
		}
	})
	b.Run("client-go", func(b *testing.B) {
		cli, _ := s.loggedClient(b)
		name := testName(b)
		term := func() {
			g := runClientGo(b, cli, s.ns, name, "g", true)
			if !g.leads(5 * time.Second) {
				b.Fatal("client-go did not lead a free Lease")
			}
			g.stop() // releases
		}
		term()
		for b.Loop() {
			term()
		}
	})
}

// One renewal of a held election. Each side renews on a client of the
// same configuration; the elector Backend's watch of the namespace's
// Leases, which every renewal after the first of a held lease runs beside,
// is answered before the timed renewals.
func BenchmarkRenew(b *testing.B) {
	s := testServer(b)
	warmUp(b, s)
	b.Run("elector", func(b *testing.B) {
		l := heldLease(b, s)
		for b.Loop() {
			if err := l.Renew(testCtx(b)); err != nil {
				b.Fatal(err)
			}
		}
		_ = l.Release(testCtx(b))
	})
	b.Run("client-go", func(b *testing.B) {
		// client-go's renewal fast path: LeaseLock.Update of the record it
		// last wrote, with a new renewTime.
		lock, rec := heldLeaseLock(b, s, s.ns)
		for b.Loop() {
			rec.RenewTime = metav1.Now()
			if err := lock.Update(testCtx(b), rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Renewals of an elector lease and of a client-go LeaseLock, alternately,
// each side on a client of its own: adjacent renewals share the machine's
// load, which the sub-benchmarks of BenchmarkRenew, run one after the
// other, do not. It reports the median and 90th percentile of each side.
// client-go's Lease is in namespace kube-public, so that the elector
// Backend's watch of its namespace's Leases sees only its own (as it would
// beside client-go candidates of other namespaces):
//
//	cd kube && go test -run '^$' -bench BenchmarkRenewPaired -benchtime 300x -count 6
func BenchmarkRenewPaired(b *testing.B) {
	s := testServer(b)
	l := heldLease(b, s)
	lock, rec := heldLeaseLock(b, s, "kube-public")
	var el, cg []time.Duration
	elector := func() {
		t := time.Now()
		if err := l.Renew(testCtx(b)); err != nil {
			b.Fatal(err)
		}
		el = append(el, time.Since(t))
	}
	clientgo := func() {
		t := time.Now()
		rec.RenewTime = metav1.Now()
		if err := lock.Update(testCtx(b), rec); err != nil {
			b.Fatal(err)
		}
		cg = append(cg, time.Since(t))
	}
	first := true
	for b.Loop() {
		if first { // each side goes first every other time
			elector()
			clientgo()
		} else {
			clientgo()
			elector()
		}
		first = !first
	}
	reportQuantiles(b, el, "elector")
	reportQuantiles(b, cg, "client-go")
	_ = l.Release(testCtx(b))
}

// Crash failover: the holder is cut off from the apiserver right after a
// renewal; time from that renewal until a waiting candidate leads.
func BenchmarkCrashFailover(b *testing.B) {
	s := testServer(b)
	b.Run("elector", func(b *testing.B) {
		name := testName(b)
		var took []time.Duration
		waiter := testBackend(b, s, nil)
		for b.Loop() {
			p := testproxy.New(b, s.addr())
			kb, err := New(s.via(b, p.Addr()), s.ns, nil)
			if err != nil {
				b.Fatal(err)
			}
			l := mustCampaign(b, kb, backendCand(name, "x", goLeaseDuration))
			ch := campaignAsync(testCtx(b), waiter, backendCand(name, "y", goLeaseDuration))
			pending(b, ch, 50*time.Millisecond)
			if err := l.Renew(testCtx(b)); err != nil {
				b.Fatal(err)
			}
			renewed := time.Now()
			p.Cut()
			r := await(b, ch, 10*time.Second)
			if r.err != nil {
				b.Fatal(r.err)
			}
			took = append(took, r.at.Sub(renewed))
			_ = r.l.Release(testCtx(b))
			_ = kb.Close()
			p.Close()
		}
		reportQuantiles(b, took, "failover")
	})
	b.Run("client-go", func(b *testing.B) {
		name := testName(b)
		var took []time.Duration
		for b.Loop() {
			p := testproxy.New(b, s.addr())
			holder := runClientGo(b, s.via(b, p.Addr()), s.ns, name, "g-holder", false)
			if !holder.leads(10 * time.Second) {
				b.Fatal("client-go did not lead")
			}
			waiter := runClientGoT(b, s, name, "g-waiter")
			if waiter.leads(goRetryPeriod) {
				b.Fatal("client-go waiter led while the Lease was held")
			}
			p.Cut() // within one RetryPeriod of the holder's last renewal
			cut := time.Now()
			if !waiter.leads(10 * time.Second) {
				b.Fatal("client-go waiter did not take over")
			}
			took = append(took, waiter.at.Sub(cut))
			holder.stop()
			waiter.stop()
			p.Close()
		}
		reportQuantiles(b, took, "failover")
	})
}

// heldLease returns an elector lease held for a minute on a Backend of
// its own, once the Backend's watch of the namespace's Leases is answered.
func heldLease(b *testing.B, s server) *lease {
	cli, log := s.loggedClient(b)
	kb, err := New(cli, s.ns, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = kb.Close() })
	l := mustCampaign(b, kb, backendCand(testName(b), "x", time.Minute))
	log.awaitWatch(b, 5*time.Second)
	return l
}

// heldLeaseLock returns a client-go LeaseLock in namespace ns on a client
// of its own, holding its Lease for a minute, and the record it wrote.
func heldLeaseLock(b *testing.B, s server, ns string) (*resourcelock.LeaseLock, resourcelock.LeaderElectionRecord) {
	cli, _ := s.loggedClient(b)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: testName(b), Namespace: ns},
		Client:     cli,
		LockConfig: resourcelock.ResourceLockConfig{Identity: "g"},
	}
	now := metav1.Now()
	rec := resourcelock.LeaderElectionRecord{HolderIdentity: "g", LeaseDurationSeconds: 60, AcquireTime: now, RenewTime: now}
	if err := lock.Create(testCtx(b), rec); err != nil {
		b.Fatalf("creating client-go's Lease in namespace %s: %v", ns, err)
	}
	return lock, rec
}
