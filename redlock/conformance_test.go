package redlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/internal/testenv"
)

// harness gives the suite Backends over the five real Redis masters, each
// Backend with clients of its own so that Crash and Isolate act on it
// alone.
type harness struct {
	t     *testing.T
	addrs []string
	root  *nodes // for Expire

	mu    sync.Mutex
	nodes map[backend.Backend]*nodes
}

func (h *harness) MakeBackend(context.Context) (backend.Backend, error) {
	n := newNodes(h.t, h.addrs)
	b, err := New(n.clients, &Options{RequestTimeout: conformanceRequestTimeout})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.nodes[b] = n
	h.mu.Unlock()
	return b, nil
}

// conformanceRequestTimeout bounds each request of the suite's Backends. The
// rules run at once, dozens of Backends on the same five nodes, beside the
// other shards' tests, and none of them times RequestTimeout itself: on a
// loaded CI machine three nodes at once can keep a Register waiting past
// 500 ms.
const conformanceRequestTimeout = 1500 * time.Millisecond

// TTL is short enough for a quick suite, long enough that a round bounded
// by conformanceRequestTimeout and the drift allowance leave most of it
// valid.
func (h *harness) TTL() time.Duration { return 5 * time.Second }

func (h *harness) Close() {}

// Crash closes b's clients: b sends nothing more, and its keys expire.
func (h *harness) Crash(b backend.Backend) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[b].close()
}

// Isolate makes every command of b fail until Heal.
func (h *harness) Isolate(b backend.Backend) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[b].isolated.Store(true)
}

func (h *harness) Heal(b backend.Backend) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nodes[b].isolated.Store(false)
}

// Expire deletes l's keys on every node, without announcing it, as if they
// had expired.
func (h *harness) Expire(l backend.Lease) {
	rl := l.(*lease)
	for _, done := range rl.last { // let the slower nodes' SETs land first
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range h.root.clients {
		if v, err := c.Get(ctx, rl.key).Result(); err == nil && len(v) >= len(rl.id) && v[:len(rl.id)] == rl.id {
			if err := c.Del(ctx, rl.key).Err(); err != nil {
				h.t.Errorf("Expire: DEL %q: %v", rl.key, err)
			}
		}
	}
}

var (
	_ backendtest.Crasher  = (*harness)(nil)
	_ backendtest.Expirer  = (*harness)(nil)
	_ backendtest.Isolator = (*harness)(nil)
)

// TestConformance is not t.Parallel: backendtest.Run already runs its rules
// at once (one per CPU), dozens of Backends on the five nodes, and their
// hand-over (TTL/2, 2.5 s) and prompt-return (1 s) bounds, on 1.5 s
// requests, leave no room for other tests' load on top.
func TestConformance(t *testing.T) {
	addrs := testenv.RedisAddrs(t)
	backendtest.Run(t, func(_ context.Context, t *testing.T) (backendtest.Harness, error) {
		return &harness{t: t, addrs: addrs, root: newNodes(t, addrs), nodes: make(map[backend.Backend]*nodes)}, nil
	})
}
