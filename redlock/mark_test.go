package redlock

import (
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// TestUnmarkKeepsCounter: Unmark on an election that was never marked, while
// it has a live leader, removes nothing, and after Mark it removes the
// marker only: the fencing counter stays on every node, so the next
// leader's token is above every earlier one. Not t.Parallel: the live
// lease, on a 2 s TTL that nothing renews, must outlast the requests before
// its Renew.
func TestUnmarkKeepsCounter(t *testing.T) {
	b, n := newBackend(t, nil)
	ctx := testCtx(t)
	e := name(t)
	c := backend.Candidate{Election: e, Identity: "alice", TTL: 2 * time.Second}
	var last uint64
	for range 3 {
		l, err := b.Campaign(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	live, err := b.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	counter := b.lockKey(e) + counterSuffix
	before := make([]uint64, len(n.clients))
	for i, cl := range n.clients {
		before[i], _ = cl.Get(ctx, counter).Uint64()
	}
	removed, err := b.Unmark(ctx, e)
	if err != nil || removed {
		t.Fatalf("Unmark with a live leader and no marker: got %v, %v; want false, nil", removed, err)
	}
	if h, err := b.Leader(ctx, e); err != nil || h.Identity != "alice" || h.Token != live.Token() {
		t.Errorf("holder after Unmark: got %+v, %v; want alice with token %d", h, err, live.Token())
	}
	if err := live.Renew(ctx); err != nil {
		t.Errorf("the live leader's Renew after Unmark: %v", err)
	}
	for i, cl := range n.clients {
		if v, _ := cl.Get(ctx, counter).Uint64(); v < before[i] {
			t.Errorf("node %d: counter after Unmark: got %d; want at least %d, as before: Unmark never lowers a counter", i+1, v, before[i])
		}
	}
	if err := b.Mark(ctx, e, live, "migrated-to-etcd"); err != nil {
		t.Fatal(err)
	}
	for i, cl := range n.clients {
		before[i], _ = cl.Get(ctx, counter).Uint64()
	}
	removed, err = b.Unmark(ctx, e)
	if err != nil || !removed {
		t.Fatalf("Unmark of a marked election: got %v, %v; want true, nil", removed, err)
	}
	for i, cl := range n.clients {
		if v, _ := cl.Get(ctx, counter).Uint64(); v < before[i] {
			t.Errorf("node %d: counter after Unmark of the marker: got %d; want at least %d", i+1, v, before[i])
		}
	}
	if removed, err = b.Unmark(ctx, e); err != nil || removed {
		t.Errorf("second Unmark: got %v, %v; want false, nil: nothing left", removed, err)
	}
	next, err := b.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(ctx)
	if next.Token() <= live.Token() || live.Token() <= last {
		t.Errorf("tokens: %d, then %d before Mark, then %d after Unmark; want them strictly rising", last, live.Token(), next.Token())
	}
}

// TestUnmarkLeavesAnotherLease: a marker fragment on one node is removed,
// and a node holding a lease keeps it.
func TestUnmarkLeavesAnotherLease(t *testing.T) {
	t.Parallel()
	b, n := newBackend(t, nil)
	ctx := testCtx(t)
	e := name(t)
	key := b.lockKey(e)
	if err := n.clients[0].Set(ctx, key, MarkerID+" 7 migrated-to-etcd", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.clients[1].Set(ctx, key, "0123456789abcdef0123456789abcdef.1 8 bob", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	removed, err := b.Unmark(ctx, e)
	if err != nil || !removed {
		t.Fatalf("Unmark of a fragment: got %v, %v; want true, nil", removed, err)
	}
	if v, err := n.clients[0].Exists(ctx, key).Result(); err != nil || v != 0 {
		t.Errorf("node 1: the marker fragment is still there (%d, %v)", v, err)
	}
	if v, err := n.clients[1].Get(ctx, key).Result(); err != nil || v != "0123456789abcdef0123456789abcdef.1 8 bob" {
		t.Errorf("node 2: got %q, %v; want bob's lease untouched", v, err)
	}
	n.clients[1].Del(ctx, key)
}
