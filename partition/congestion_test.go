package partition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// errOverloaded is congested's transient failure.
var errOverloaded = errors.New("no reply within the request timeout")

// congested is a store shared by every member that serves at most capacity
// requests (campaigns and reads) at once, each in cost; a request arriving
// while capacity are in flight stays in flight for timeout, then fails
// transiently — a driver's per-request timeout (Redlock's RequestTimeout)
// when the requests queue up in a loaded client and store. The failing
// requests keep the queue full: more requests in flight, more of them
// fail.
type congested struct {
	mu       sync.Mutex
	inflight int
	failures atomic.Int64
	byKind   map[string]int // failures by kind, under mu

	capacity      int
	cost, timeout time.Duration
}

// do serves one request of kind. Its sleeps are the request's service
// time and timeout on the synctest bubble's fake clock: they model the
// store, they do not wait for another goroutine.
func (c *congested) do(kind string) error {
	c.mu.Lock()
	c.inflight++
	over := c.inflight > c.capacity
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inflight--
		c.mu.Unlock()
	}()
	if over {
		time.Sleep(c.timeout)
		c.failures.Add(1)
		c.mu.Lock()
		if c.byKind == nil {
			c.byKind = map[string]int{}
		}
		c.byKind[kind]++
		c.mu.Unlock()
		return errOverloaded
	}
	time.Sleep(c.cost)
	return nil
}

// kindOf names a request on election: op, then "slot" or "partition".
func kindOf(op, election string) string {
	if strings.Contains(election, "/m/") {
		return op + " slot"
	}
	return op + " partition"
}

// congestedPeer is one member's Backend on a congested store.
type congestedPeer struct {
	backend.Backend
	c *congested
}

func (b congestedPeer) Campaign(ctx context.Context, cand backend.Candidate) (backend.Lease, error) {
	if err := b.c.do(kindOf("campaign", cand.Election)); err != nil {
		return nil, err
	}
	return b.Backend.Campaign(ctx, cand)
}

func (b congestedPeer) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := b.c.do(kindOf("read", election)); err != nil {
		return backend.Holder{}, err
	}
	return b.Backend.Leader(ctx, election)
}

// TestColdStartCongested: 10 members starting together on a store that
// fails requests once more than 128 are in flight own all 1,024 partitions
// within seconds. Each member campaigns for about 102 partitions
// nobody holds; started all at once (and with a reading of every holder
// as each member settled), most requests failed, their retries kept the
// store overloaded, and the cold start did not end (a full-size Redlock
// cold start took 21-24 s, most campaigns failing with "no reply within
// RequestTimeout"). The campaign window starts them in waves it narrows as
// campaigns fail.
func TestColdStartCongested(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, count = 1024, 10
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		c := &congested{capacity: 128, cost: time.Millisecond, timeout: 500 * time.Millisecond}
		var ms []*member
		for i := range count {
			ms = append(ms, start(t, congestedPeer{store.Peer(), c}, "c", n, g.options(fmt.Sprintf("c%d", i))))
		}
		took := until(t, time.Minute, func() bool { return balanced(g, "c", n, ids(ms)) })
		c.mu.Lock()
		t.Logf("cold start %v, %d requests failed: %v", took, c.failures.Load(), c.byKind)
		c.mu.Unlock()
		// 2.5-7.5 s in 40 runs, and 8.06 s once (the backoffs are
		// random, and a joiner's first reading competes with the
		// campaigns); before the window, not within the minute.
		if took > 15*time.Second {
			t.Errorf("cold start took %v; want ≤ 15 s", took)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}
