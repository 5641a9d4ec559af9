package kube

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/testproxy"
)

// limitedClient returns a client behind a proxy of its own with the
// client-side rate limit of a kube:// URL by default (qps 50, burst 100),
// and its limiter.
func (s server) limitedClient(t testing.TB) (*coordinationv1client.CoordinationV1Client, *RateLimiter) {
	t.Helper()
	p := testproxy.New(t, s.addr())
	cfg := rest.CopyConfig(s.cfg)
	cfg.Host = "https://" + p.Addr()
	rl := NewRateLimiter(defaultQPS, defaultBurst)
	cfg.RateLimiter = rl
	cli, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("kube client: %v", err)
	}
	return cli, rl
}

// One Backend at the default rate asked to hold four times its capacity
// (qps × the renewal interval: 50 elections at TTL 3 s) keeps at least 80%
// of the capacity held, none of its terms lost (unless the apiserver itself
// answered nobody for a renew interval), its renewals never failing at the
// limiter, and says so once in its Warnings, naming qps and burst.
func TestOverloadKeepsCapacity(t *testing.T) {
	s := testServer(t)
	cli, rl := s.limitedClient(t)
	b, err := New(cli, s.ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	capacity := int(defaultQPS * (testTTL / 3).Seconds())
	n := 4 * capacity
	var held, elected, revoked atomic.Int64
	var reasons sync.Map // election → why its term ended
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	stall := s.watchStalls(t, ctx)
	prefix := testName(t)
	for i := range n {
		e, err := elector.New(b, fmt.Sprintf("%s-%d", prefix, i), &elector.Options{
			Identity: "overload",
			TTL:      testTTL,
			Logger:   slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, _ elector.Term) {
				held.Add(1)
				elected.Add(1)
				<-ctx.Done()
				held.Add(-1)
			},
			OnRevoked: func(term elector.Term, reason error) {
				if ctx.Err() == nil {
					revoked.Add(1)
					reasons.Store(term.Election, reason)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}
	// Warm up for three TTLs, then watch the count for four.
	warm := time.NewTimer(3 * testTTL)
	<-warm.C
	lowest := int64(n)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.Now().Add(4 * testTTL)
	for now := range tick.C {
		lowest = min(lowest, held.Load())
		if now.After(end) {
			break
		}
	}
	longest := stall()
	t.Logf("held at least %d of %d elections asked (capacity %d) over %v; %d terms won, %d lost, %d renewals late at the limiter; the apiserver's longest time without completing a write %v",
		lowest, n, capacity, 4*testTTL, elected.Load(), revoked.Load(), rl.LateRenewals(), longest)
	if want := int64(capacity * 8 / 10); lowest < want {
		t.Errorf("held as few as %d elections; want at least %d (80%% of the capacity %d)", lowest, want, capacity)
	}
	lost := revoked.Load()
	reasons.Range(func(k, v any) bool {
		t.Logf("lost %s: %v", k, v)
		return true
	})
	// A term is lost when no renewal gets through for about two renew
	// intervals; an apiserver that completes no write for one is the
	// host's load (the limiter's own delays are counted apart, below).
	switch {
	case lost != 0 && longest < testTTL/3:
		t.Errorf("%d terms lost while the apiserver completed a write at least every %v; want none: the Backend keeps what it renews", lost, longest)
	case lost != 0:
		t.Logf("%d terms lost while the apiserver completed no write for %v: not the Backend's doing", lost, longest)
	}
	if late := rl.LateRenewals(); late != 0 {
		t.Errorf("%d renewals failed at the rate limiter; want none", late)
	}
	var warned []string
	for _, w := range b.Warnings() {
		if strings.Contains(w, "further campaigns wait") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "qps 50") || !strings.Contains(warned[0], "burst 100") {
		t.Errorf("Warnings: %q; want one overload warning naming qps 50 and burst 100", warned)
	}
}

// Renewals that fail while the apiserver is out of reach do not count
// toward the rate of a held lease: after an outage the Backend does not
// take its held leases for several times as costly as they are, and hold
// every campaign back.
func TestFailedRenewalsKeepTheRenewRate(t *testing.T) {
	s := testServer(t)
	b, p := proxiedBackend(t, s)
	l := mustCampaign(t, b, cand(testName(t), "holder"))
	before := l.renewRate()
	p.Cut()
	failed := 0
	for range 10 {
		ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
		if err := l.Renew(ctx); err != nil {
			failed++
		}
		cancel()
	}
	p.Heal()
	if failed == 0 {
		t.Fatal("no renewal failed while the apiserver was cut off")
	}
	if got := l.renewRate(); got > 1.01*before {
		t.Errorf("after %d failed renewals the lease counts %.2f renewals/s; want the %.2f of its schedule", failed, got, before)
	}
}

// watchStalls writes a Lease of its own every 100 ms on a client of its
// own, without a rate limit, as a renewal writes, until ctx ends or the
// returned function is called, which returns the longest time the
// apiserver went without completing a write. Writes, not reads: the
// apiserver answers reads from its watch cache while the etcd under it
// stalls, and renewals stall with it.
func (s server) watchStalls(t testing.TB, ctx context.Context) func() time.Duration {
	t.Helper()
	leases := s.client(t).Leases(s.ns) // behind a proxy that t closes, with its connections
	name := testName(t) + "-stall-probe"
	obj, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("stall probe: %v", err)
	}
	t.Cleanup(func() { _ = leases.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	ctx, cancel := context.WithCancel(ctx)
	var longest atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			now := metav1.NewMicroTime(time.Now())
			obj.Spec.RenewTime = &now
			got, err := leases.Update(ctx, obj, metav1.UpdateOptions{})
			if ctx.Err() != nil {
				return
			}
			switch {
			case err == nil:
				obj = got
				at := time.Now()
				if gap := at.Sub(last); gap > time.Duration(longest.Load()) {
					longest.Store(int64(gap))
				}
				last = at
			case apierrors.IsConflict(err):
				if cur, err := leases.Get(ctx, name, metav1.GetOptions{}); err == nil {
					obj = cur
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() time.Duration {
		cancel()
		<-done
		return time.Duration(longest.Load())
	}
}
