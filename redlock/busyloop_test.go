package redlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// roundCounter is a go-redis hook that counts the acquire rounds a client
// sends: the EVALSHA (or EVAL) of acquireScript that a node ran.
type roundCounter struct{ n atomic.Int64 }

func (h *roundCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if len(args) < 2 || (err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")) {
			return err // go-redis sends the script again with EVAL
		}
		switch name, _ := args[0].(string); {
		case name == "evalsha" && args[1] == acquireScript.Hash(),
			name == "eval" && args[1] == acquireSource:
			h.n.Add(1)
		}
		return err
	}
}
func (h *roundCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestWaitersBehindDeadHolder: no busy loop behind a crashed holder: its
// key still sits on a quorum (nodes 1-3) while nodes 4 and 5 are free, and
// several candidates wait. Each must sleep until the key can have expired,
// not retry in a loop woken by its rivals' clean-ups: at most 10 acquire
// rounds per TTL each, and the winner's token exceeds the previous term's
// by at most the number of rounds run (each round INCRs each counter at
// most once).
func TestWaitersBehindDeadHolder(t *testing.T) {
	t.Parallel()
	for _, waiters := range []int{2, 5} {
		t.Run(fmt.Sprintf("waiters=%d", waiters), func(t *testing.T) {
			testWaitersBehindDeadHolder(t, waiters)
		})
	}
}

func testWaitersBehindDeadHolder(t *testing.T, waiters int) {
	const ttl = 2 * time.Second
	const maxRoundsPerTTL = 10
	addrs := testenv.RedisAddrs(t)
	// The nodes the serial tests restarted need not be waited out (nor
	// left out of the quorums): this test restarts none.
	b0, n0 := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	key := b0.lockKey(e)

	// The previous term, then a dead holder's key on nodes 1-3 only.
	prev, err := b0.Campaign(ctx, backend.Candidate{Election: e, Identity: "previous", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if err := prev.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range n0.clients[:3] {
		if err := c.Set(ctx, key, "dead-holder", 1500*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}

	type result struct {
		i int
		l backend.Lease
	}
	counters := make([]*roundCounter, waiters)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	won := make(chan result, waiters)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range waiters {
		n := newNodes(t, addrs)
		counters[i] = &roundCounter{}
		n.clients[3].(*redis.Client).AddHook(counters[i])
		b, err := New(n.clients, &Options{RequestTimeout: testRequestTimeout, RestartDelay: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil { // retry transient errors, as the portable layer does
				l, err := b.Campaign(wctx, backend.Candidate{Election: e, Identity: fmt.Sprintf("waiter-%d", i), TTL: ttl})
				if err == nil {
					won <- result{i, l}
					return
				}
				if wctx.Err() == nil {
					t.Logf("waiter %d: %v", i, err)
				}
			}
		}()
	}
	var first result
	select {
	case first = <-won:
	case <-ctx.Done():
		t.Fatal("no waiter was elected")
	}
	elapsed := time.Since(start)
	stop()
	wg.Wait()
	close(won)
	for r := range won {
		if r.l != first.l {
			t.Errorf("waiter %d was elected too, with token %d, while waiter %d holds token %d", r.i, r.l.Token(), first.i, first.l.Token())
		}
	}
	if err := first.l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	total, most := int64(0), int64(0)
	allowed := int64(maxRoundsPerTTL * (1 + elapsed/ttl))
	for i, c := range counters {
		rounds := c.n.Load()
		total += rounds
		most = max(most, rounds)
		if rounds > allowed {
			t.Errorf("waiter %d ran %d acquire rounds in %v, want at most %d (%d per TTL of %v)", i, rounds, elapsed, allowed, maxRoundsPerTTL, ttl)
		}
	}
	t.Logf("%d waiters: waiter %d elected after %v with token %d (previous %d); %d rounds in all, at most %d by one waiter", waiters, first.i, elapsed, first.l.Token(), prev.Token(), total, most)
	if got := first.l.Token(); got <= prev.Token() || got-prev.Token() > uint64(total) {
		t.Errorf("winner's token %d, previous term's %d: want it higher by 1 to %d, the number of rounds run", got, prev.Token(), total)
	}
}
