package kube

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/internal/testproxy"
)

// TestConformance runs the conformance suite on Leases with the shortest TTL
// client-go candidates can share ([MinTTL]). It runs alone, not in
// parallel: the suite runs its rules at once itself (as many as the CPUs,
// outside go test's count), hands terms over hundreds of times, and bounds
// a hand-over at half the TTL.
func TestConformance(t *testing.T) {
	s := testServer(t)
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		return newHarness(t, s, nil, MinTTL), nil
	})
}

// TestConformanceElectorOnly runs the suite with Options.ElectorOnly, where
// the Deadline counts from every renewal and a Lease may last one second.
// It runs alone, as TestConformance does, with hand-overs bounded at half a
// second.
func TestConformanceElectorOnly(t *testing.T) {
	s := testServer(t)
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		return newHarness(t, s, &Options{ElectorOnly: true}, time.Second), nil
	})
}

// harness gives each Backend its own client behind its own proxy, so that
// it can be crashed (proxy cut for good) or isolated (cut until healed)
// alone.
type harness struct {
	t      *testing.T
	s      server
	opts   *Options // of every Backend made
	ttl    time.Duration
	admin  *coordinationv1client.CoordinationV1Client
	adminP *testproxy.Proxy

	mu      sync.Mutex
	proxies map[backend.Backend]*testproxy.Proxy
}

var (
	_ backendtest.Crasher      = (*harness)(nil)
	_ backendtest.Expirer      = (*harness)(nil)
	_ backendtest.Isolator     = (*harness)(nil)
	_ backendtest.TTLRounder   = (*harness)(nil)
	_ backendtest.ExpiryLagger = (*harness)(nil)
)

func newHarness(t *testing.T, s server, opts *Options, ttl time.Duration) *harness {
	p := testproxy.New(t, s.addr())
	return &harness{t: t, s: s, opts: opts, ttl: ttl, admin: s.via(t, p.Addr()), adminP: p, proxies: make(map[backend.Backend]*testproxy.Proxy)}
}

func (h *harness) MakeBackend(ctx context.Context) (backend.Backend, error) {
	p := testproxy.New(h.t, h.s.addr())
	b, err := New(h.s.via(h.t, p.Addr()), h.s.ns, h.opts)
	if err != nil {
		p.Close()
		return nil, err
	}
	h.mu.Lock()
	h.proxies[b] = p
	h.mu.Unlock()
	return b, nil
}

func (h *harness) TTL() time.Duration { return h.ttl }

// TTLGranularity: leaseDurationSeconds is whole seconds.
func (h *harness) TTLGranularity() time.Duration { return time.Second }

// ExpiryLag: a reader lists an entry until the apiserver's clock, sampled
// from a Date header in whole seconds, says its last write (a managedFields
// stamp in whole seconds) is older than its TTL and serverSkew; so a crashed
// process's entry is listed up to two grains and the skew past its TTL,
// plus a List's latency.
func (h *harness) ExpiryLag() time.Duration { return 2*stampGrain + serverSkew }

// Crash cuts b off from the apiserver for good: nothing more reaches it, and
// b's Leases expire after their duration.
func (h *harness) Crash(b backend.Backend) { h.proxyOf(b).Cut() }

// Expire writes a released record onto l's Lease through another client, as
// if its holder had expired and been cleared: l is no longer the holder.
func (h *harness) Expire(l backend.Lease) {
	kl := l.(*lease)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases := h.admin.Leases(kl.b.ns)
	cur, err := leases.Get(ctx, kl.name, metav1.GetOptions{})
	if err != nil {
		h.t.Errorf("Expire: get lease %s: %v", kl.name, err)
		return
	}
	releasedRecord().writeTo(cur)
	if _, err := leases.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		h.t.Errorf("Expire: update lease %s: %v", kl.name, err)
	}
}

func (h *harness) Isolate(b backend.Backend) { h.proxyOf(b).Cut() }
func (h *harness) Heal(b backend.Backend)    { h.proxyOf(b).Heal() }

func (h *harness) proxyOf(b backend.Backend) *testproxy.Proxy {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.proxies[b]
}

func (h *harness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.proxies {
		p.Close()
	}
	h.adminP.Close()
}
