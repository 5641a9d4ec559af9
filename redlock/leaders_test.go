package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// readCounter is a go-redis hook that counts the read scripts a client
// runs: batched (readBatchScript) and single (readScript).
type readCounter struct{ batch, single atomic.Int64 }

func (h *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) >= 2 && cmd.Name() == "evalsha" {
			switch args[1] {
			case readBatchScript.Hash():
				h.batch.Add(1)
			case readScript.Hash():
				h.single.Add(1)
			}
		}
		return next(ctx, cmd)
	}
}
func (h *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeadersOneRequestPerNode: Leaders reads 200 elections with one
// request per node and reports each as Leader does: held by our
// candidates, free, held by a foreign lock (redsync, node-redlock), held on
// a minority only, and one whose key on a majority is a hash (garbage left
// by another program), which must not fail the rest of the batch.
func TestLeadersOneRequestPerNode(t *testing.T) {
	t.Parallel()
	addrs := testenv.RedisAddrs(t)
	n := newNodes(t, addrs)
	counters := make([]*readCounter, len(n.clients))
	for i, c := range n.clients {
		counters[i] = &readCounter{}
		c.AddHook(counters[i])
	}
	b, err := New(n.clients, &Options{RequestTimeout: testRequestTimeout, NoPrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	// The test is about Leaders' batched reads, not restarts: with the
	// default restart delay (the one-minute TTL below) its Campaigns would
	// wait until a majority of the nodes had been up for a minute, and it
	// runs after the tests whose cleanups restart nodes.
	other, _ := newBackend(t, &Options{NoPrefix: true, RestartDelay: time.Millisecond})
	ctx := testCtx(t)

	const total = 200
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("%s/%d", name(t), i)
	}
	for i := 0; i < total; i += 3 { // every third held by a candidate
		l, err := other.Campaign(ctx, backend.Candidate{Election: names[i], Identity: fmt.Sprintf("c%d", i), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.Background())
	}
	const foreign, minority, garbage = 1, 4, 7
	for k, c := range n.clients {
		if k < 3 {
			if err := c.SetNX(ctx, names[foreign], "Zm9yZWlnbi1yZWRzeW5jLXZhbHVl", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.HSet(ctx, names[garbage], "f", "v").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if k < 2 {
			if err := c.SetNX(ctx, names[minority], "Zm9yZWlnbi1yZWRzeW5jLXZhbHVl", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for _, c := range n.clients {
			c.Del(context.Background(), names[garbage])
		}
	})

	hs, errs := b.Leaders(ctx, names)
	for i, c := range counters {
		if got, single := c.batch.Load(), c.single.Load(); got != 1 || single != 0 {
			t.Errorf("node %d got %d batched and %d single read calls for %d elections; want 1 and 0", i+1, got, single, total)
		}
	}
	for i, e := range names {
		if i == garbage {
			if !errors.Is(errs[i], backend.ErrNoLeader) {
				t.Errorf("Leaders: election %d, a hash on a majority: got (%+v, %v); want ErrNoLeader", i, hs[i], errs[i])
			}
			continue
		}
		want, werr := b.Leader(ctx, e)
		if (werr == nil) != (errs[i] == nil) || errors.Is(werr, backend.ErrNoLeader) != errors.Is(errs[i], backend.ErrNoLeader) {
			t.Fatalf("Leaders: election %d: got error %v; Leader got %v", i, errs[i], werr)
		}
		if hs[i].Identity != want.Identity || hs[i].Token != want.Token || hs[i].Election != want.Election {
			t.Errorf("Leaders: election %d: got %+v; Leader got %+v", i, hs[i], want)
		}
		if werr == nil && (hs[i].TTL <= 0 || hs[i].TTL > time.Minute) {
			t.Errorf("Leaders: election %d: TTL %v; want in (0, 1m]", i, hs[i].TTL)
		}
	}
	if hs[0].Identity != "c0" || hs[0].Token == 0 {
		t.Errorf("Leaders: election 0: got %+v; want c0 with a token", hs[0])
	}
	if errs[foreign] != nil || hs[foreign].Identity != "" || hs[foreign].TTL <= 0 {
		t.Errorf("Leaders: a foreign lock: got (%+v, %v); want an anonymous holder with a TTL", hs[foreign], errs[foreign])
	}
	if !errors.Is(errs[minority], backend.ErrNoLeader) {
		t.Errorf("Leaders: a lock on 2 of 5 nodes: got (%+v, %v); want ErrNoLeader", hs[minority], errs[minority])
	}
}

// TestLeadersUnreachable: with three of five nodes cut off, Leaders cannot
// tell whether a free election is held, and says so for each; an invalid
// name is refused at its own index; a cancelled ctx is reported as such.
func TestLeadersUnreachable(t *testing.T) {
	t.Parallel()
	addrs := testenv.RedisAddrs(t)
	up, cut := newNodes(t, addrs[:2]), newNodes(t, addrs[2:])
	cut.isolated.Store(true)
	b, err := New(append(up.clients, cut.clients...), &Options{RequestTimeout: testRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := testCtx(t)
	names := []string{name(t) + "/a", "", name(t) + "/b"}
	_, errs := b.Leaders(ctx, names)
	for _, i := range []int{0, 2} {
		if errs[i] == nil || errors.Is(errs[i], backend.ErrNoLeader) || !strings.Contains(errs[i].Error(), "2 of 5 nodes answered, too few to tell") {
			t.Errorf("Leaders: election %d with 3 of 5 nodes cut off: got %v; want too few to tell", i, errs[i])
		}
	}
	if !errors.Is(errs[1], backend.ErrInvalid) {
		t.Errorf("Leaders: an empty name: got %v; want ErrInvalid", errs[1])
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, errs = b.Leaders(cctx, names[:1])
	if errs[0] != context.Canceled {
		t.Errorf("Leaders with a cancelled ctx: got %v; want context.Canceled", errs[0])
	}
	_ = b.Close()
	if _, errs = b.Leaders(ctx, names[:1]); !errors.Is(errs[0], backend.ErrClosed) {
		t.Errorf("Leaders after Close: got %v; want ErrClosed", errs[0])
	}
}

// TestParseObservedBatch: a node answering the batched read with garbage
// gets an error or zero values, never a panic or a misread key.
func TestParseObservedBatch(t *testing.T) {
	t.Parallel()
	if _, err := parseObservedBatch([]any{int64(5)}, nil); err == nil {
		t.Error("an odd number of values: got no error")
	}
	if _, err := parseObservedBatch(nil, errors.New("boom")); err == nil {
		t.Error("a failed call: got no error")
	}
	got, err := parseObservedBatch([]any{int64(1500), "v1", "x", int64(3), int64(-2), nil}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := observedBatch{{value: "v1", pttl: 1500 * time.Millisecond}, {}, {}}
	if len(got) != len(want) {
		t.Fatalf("got %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("key %d: got %+v; want %+v", i, got[i], want[i])
		}
	}
}
