package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
	"github.com/leaderkit/elector/partition"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// partLedger records the members' callbacks and checks, as they happen, that
// no partition has two OnAssigned running at once and that tokens strictly
// increase per partition.
type partLedger struct {
	tb      testing.TB
	mu      sync.Mutex
	active  map[int]string
	last    map[int]uint64
	changed chan struct{}  // closed and replaced on every change
	starts  int            // OnAssigned calls so far
	ended   map[string]int // assignments ended, by member and cause
	// stalls, if set, measures the apiserver's own stalls, which settle
	// does not count against its limit.
	stalls *stallMeter
}

// newPartLedger returns an empty partLedger that reports to tb.
func newPartLedger(tb testing.TB) *partLedger {
	return &partLedger{tb: tb, active: map[int]string{}, last: map[int]uint64{}, ended: map[string]int{}, changed: make(chan struct{})}
}

// assigned returns how many times OnAssigned has been called.
func (g *partLedger) assigned() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.starts
}

func (g *partLedger) options(id string) *partition.Options {
	return &partition.Options{
		Identity: id,
		TTL:      2 * time.Second,
		Logger:   slog.New(slog.DiscardHandler),
		OnAssigned: func(ctx context.Context, a partition.Assignment) {
			g.mu.Lock()
			if other, ok := g.active[a.Partition]; ok {
				g.tb.Errorf("partition %d assigned to %s (token %d) while %s still owns it", a.Partition, id, a.Token, other)
			}
			if a.Token <= g.last[a.Partition] {
				g.tb.Errorf("partition %d assigned to %s with token %d; want > %d", a.Partition, id, a.Token, g.last[a.Partition])
			}
			g.active[a.Partition], g.last[a.Partition] = id, a.Token
			g.starts++
			g.notify()
			g.mu.Unlock()
			<-ctx.Done()
			g.mu.Lock()
			if g.active[a.Partition] == id {
				delete(g.active, a.Partition)
				g.notify()
			}
			g.ended[id+": "+fmt.Sprint(context.Cause(ctx))]++
			g.mu.Unlock()
		},
	}
}

// notify wakes the waiters of settle; g.mu is held.
func (g *partLedger) notify() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// settle waits until all n partitions are owned, each by one of ids, and
// every one of ids owns at least one, for at most limit; with g.stalls set,
// the time the apiserver stalled meanwhile does not count (up to 4×limit in
// all).
func (g *partLedger) settle(n int, ids []string, limit time.Duration) {
	g.tb.Helper()
	start := time.Now()
	stalled0 := g.stalls.total()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		g.mu.Lock()
		owned := map[string]int{}
		for _, id := range g.active {
			owned[id]++
		}
		ok := len(g.active) == n && len(owned) == len(ids)
		for _, id := range ids {
			ok = ok && owned[id] > 0
		}
		changed := g.changed
		snapshot, ended := fmt.Sprint(g.active), fmt.Sprint(g.ended)
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-tick.C:
		}
		took, stalled := time.Since(start), g.stalls.total()-stalled0
		if took-stalled > limit || took > 4*limit {
			g.tb.Fatalf("owners %s after %v (of which the apiserver stalled %v); want all %d partitions owned, shared by %v; assignments ended so far: %s",
				snapshot, took.Round(time.Millisecond), stalled.Round(time.Millisecond), n, ids, ended)
		}
	}
}

// A stallMeter writes a Lease of its own through a client of its own every
// half second and sums the time the apiserver took past a second to answer
// (or did not answer): time in which the members' renewals and campaigns
// could not have been answered either. A nil stallMeter measures nothing.
type stallMeter struct {
	mu      sync.Mutex
	stalled time.Duration
}

// total returns the stalls measured so far.
func (m *stallMeter) total() time.Duration {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stalled
}

// newStallMeter starts a stallMeter on s, stopped when t ends.
func newStallMeter(t testing.TB, s server) *stallMeter {
	t.Helper()
	const (
		every  = 500 * time.Millisecond
		timely = time.Second
	)
	cli := s.client(t).Leases(s.ns)
	lease, err := cli.Create(testCtx(t), &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: testName(t) + "-stalls"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("stall meter: %v", err)
	}
	m := &stallMeter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			began := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			now := metav1.NewMicroTime(began)
			lease.Spec.RenewTime = &now
			next, err := cli.Update(rctx, lease, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				next, err = cli.Get(rctx, lease.Name, metav1.GetOptions{})
			}
			rcancel()
			if ctx.Err() != nil {
				return
			}
			if took := time.Since(began); err != nil || took > timely {
				m.mu.Lock()
				m.stalled += max(took, every)
				m.mu.Unlock()
			}
			if err == nil {
				lease = next
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// TestPartitionOnLeases runs a partition group on Leases: two members share
// eight partitions, a third joins, one leaves, one is cut off from the
// apiserver. After each step every partition is owned by exactly one
// running member, and each partition's tokens increase.
func TestPartitionOnLeases(t *testing.T) {
	t.Parallel() // a group and proxies of its own; it allows 30 s for each step to settle
	const n = 8
	s := testServer(t)
	group := testName(t)
	g := newPartLedger(t)
	type member struct {
		p      *testproxy.Proxy
		cancel context.CancelFunc
		done   chan error
	}
	ms := map[string]*member{}
	start := func(id string) {
		p := testproxy.New(t, s.addr())
		b, err := New(s.via(t, p.Addr()), s.ns, &Options{ElectorOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		a, err := partition.New(b, group, n, g.options(id))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &member{p: p, cancel: cancel, done: make(chan error, 1)}
		go func() { m.done <- a.Run(ctx) }()
		ms[id] = m
	}
	stop := func(id string) {
		ms[id].cancel()
		if err := <-ms[id].done; !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run returned %v; want context.Canceled", id, err)
		}
		delete(ms, id)
	}
	defer func() {
		for _, m := range ms {
			m.cancel()
			<-m.done
		}
	}()

	start("m0")
	start("m1")
	g.settle(n, []string{"m0", "m1"}, 30*time.Second)
	start("m2")
	g.settle(n, []string{"m0", "m1", "m2"}, 30*time.Second)
	stop("m1")
	g.settle(n, []string{"m0", "m2"}, 30*time.Second)
	cut := time.Now()
	ms["m0"].p.Cut()
	g.settle(n, []string{"m2"}, 30*time.Second)
	t.Logf("m0 cut off: m2 owned all %d partitions %v later", n, time.Since(cut).Round(time.Millisecond))
}

// An apiserver restart under a 3-member, 64-partition group at the default
// rate (each member's client limited as a kube:// URL's: qps 50, burst
// 100) and the shortest TTL client-go's candidates can share ([MinTTL])
// leaves every partition owned again within 30 s of the apiserver being
// ready, and still owned three TTLs later, with no renewal failing at the
// rate limiter: each member resumes its one watch instead of reading and
// watching every partition it waits for, and its renewals go before its
// reads. The bound tells seconds from minutes, with room for a loaded
// machine: alone the group recovers in about a quarter of a second, with
// the cores loaded six times over in 2 to 4 s. Time in which the apiserver
// itself did not answer a write within a second (a stallMeter's) does not
// count: on a starved machine a restarted apiserver can time every request
// out for tens of seconds once ready, and no member can recover then. It
// runs alone: it restarts the apiserver.
func TestPartitionsRecoverFromApiserverRestart(t *testing.T) {
	const n = 64
	s := testServer(t)
	group := testName(t)
	g := newPartLedger(t)
	g.stalls = newStallMeter(t, s)
	ids := []string{"m0", "m1", "m2"}
	var limiters []*RateLimiter
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, id := range ids {
		cli, rl := s.limitedClient(t)
		limiters = append(limiters, rl)
		b, err := New(cli, s.ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		o := g.options(id)
		o.TTL = MinTTL
		o.Logger = testenv.NewSlog(t, slog.LevelWarn).With("member", id)
		a, err := partition.New(b, group, n, o)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = a.Run(ctx) })
	}
	g.settle(n, ids, 60*time.Second)
	testenv.Fault(t, "restart", "kube", "1")
	ready := time.Now()
	g.settle(n, ids, 30*time.Second)
	t.Logf("all %d partitions owned %v after the apiserver was ready again", n, time.Since(ready).Round(time.Millisecond))
	recovered := g.assigned()
	// Still all owned three TTLs later: not a snapshot of leases about to
	// pass their deadlines. A partition lost since (a renewal the loaded
	// apiserver answered after its deadline) is free again a TTL later and
	// taken again; on a loaded machine the apiserver can time out a round
	// of renewals more than once, so this too is bounded in seconds, not
	// in TTLs.
	later := time.NewTimer(3 * MinTTL)
	<-later.C
	g.settle(n, ids, 30*time.Second)
	t.Logf("%d partitions assigned anew in the %v after recovery", g.assigned()-recovered, 3*MinTTL)
	for i, rl := range limiters {
		if late := rl.LateRenewals(); late != 0 {
			t.Errorf("%s: %d renewals failed at the rate limiter; want 0", ids[i], late)
		}
	}
}
