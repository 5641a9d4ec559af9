package etcd

import (
	"context"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
)

// testTTL is the lease TTL the conformance suite campaigns with, and the
// tests' candidates: twice etcd's smallest (the test cluster's minimum is
// ceil(1.5 × 500 ms) = 750 ms, rounded up to whole seconds), so that the
// suite's hand-over (TTL/2) and prompt (500 ms + TTL/10) bounds and its
// renewals every TTL/4 leave a loaded machine room.
const testTTL = 2 * time.Second

// TestConformance and TestConformancePrefix are not t.Parallel:
// backendtest.Run already runs their rules at once (one per CPU), and their
// hand-over (TTL/2, 1 s) and prompt-return (0.7 s) bounds leave no room for
// other tests' load on top.
func TestConformance(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		return newHarness(t, endpoints), nil
	})
}

// TestConformancePrefix runs the suite with Options.Prefix set, where the
// leases of a Backend share one watch of their keys (own.go).
func TestConformancePrefix(t *testing.T) {
	endpoints := testenv.EtcdEndpoints(t)
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		h := newHarness(t, endpoints)
		h.opts = &Options{Prefix: "/elector-conformance/"}
		return h, nil
	})
}

// harness gives each Backend its own client behind its own proxy, so that
// it can be crashed (client closed) or isolated (proxy cut) alone.
type harness struct {
	t         *testing.T
	endpoints []string
	opts      *Options // of every Backend made
	admin     *clientv3.Client

	mu      sync.Mutex
	n       int
	clients map[backend.Backend]*clientv3.Client
	proxies map[backend.Backend]*testproxy.Proxy
	crashed map[backend.Backend]bool
}

var (
	_ backendtest.Crasher  = (*harness)(nil)
	_ backendtest.Expirer  = (*harness)(nil)
	_ backendtest.Isolator = (*harness)(nil)
)

func newHarness(t *testing.T, endpoints []string) *harness {
	return &harness{
		t:         t,
		endpoints: endpoints,
		admin:     newClient(t, endpoints),
		clients:   make(map[backend.Backend]*clientv3.Client),
		proxies:   make(map[backend.Backend]*testproxy.Proxy),
		crashed:   make(map[backend.Backend]bool),
	}
}

// newClient returns a quiet client on endpoints that reconnects quickly,
// with opts added to its dial options.
func newClient(t testing.TB, endpoints []string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: append([]grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})}, opts...),
	})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	return cli
}

func (h *harness) MakeBackend(ctx context.Context) (backend.Backend, error) {
	h.mu.Lock()
	target := h.endpoints[h.n%len(h.endpoints)]
	h.n++
	h.mu.Unlock()
	p := testproxy.New(h.t, target)
	cli := newClient(h.t, []string{p.Addr()})
	b, err := New(cli, h.opts)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.clients[b], h.proxies[b] = cli, p
	h.mu.Unlock()
	return b, nil
}

func (h *harness) TTL() time.Duration { return testTTL }

// Crash closes b's client: nothing more reaches etcd, and b's leases lapse.
func (h *harness) Crash(b backend.Backend) {
	h.mu.Lock()
	cli, done := h.clients[b], h.crashed[b]
	h.crashed[b] = true
	h.mu.Unlock()
	if !done {
		_ = cli.Close()
	}
}

// Expire revokes the etcd lease under l through another client: l's key,
// and those of the other candidates sharing that lease, are deleted.
func (h *harness) Expire(l backend.Lease) {
	id := l.(*lease).s.id
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.admin.Revoke(ctx, id); err != nil {
		h.t.Errorf("Expire: revoke lease %x: %v", int64(id), err)
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
	for b, cli := range h.clients {
		if !h.crashed[b] {
			_ = cli.Close()
		}
		h.proxies[b].Close()
	}
	_ = h.admin.Close()
}
