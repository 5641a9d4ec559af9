package partition

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// batchReads is a backend.BatchReader over the memory driver that counts
// its Leaders and Leader calls.
type batchReads struct {
	*memory.Backend
	batches, singles atomic.Int64
}

func (b *batchReads) Leader(ctx context.Context, election string) (backend.Holder, error) {
	b.singles.Add(1)
	return b.Backend.Leader(ctx, election)
}

func (b *batchReads) Leaders(ctx context.Context, elections []string) ([]backend.Holder, []error) {
	b.batches.Add(1)
	hs, errs := make([]backend.Holder, len(elections)), make([]error, len(elections))
	for i, e := range elections {
		hs[i], errs[i] = b.Backend.Leader(ctx, e)
	}
	return hs, errs
}

// TestReadsInBatches: a backend that reads many holders in one call (the
// Redlock driver answers one script per node for all) gets one call per
// reading of the partitions' holders and one per chunk of membership
// slots, instead of a Leader call per election: the membership scan was
// most of a Redlock group's steady requests (each member reads 32 slots a
// poll). The holders read are the same.
func TestReadsInBatches(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	b := &batchReads{Backend: store.Peer()}
	const group, n = "batch", 40
	for p := 0; p < n; p += 2 {
		if _, err := store.Peer().Campaign(ctx, backend.Candidate{Election: Election(group, p), Identity: fmt.Sprint("w", p), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 3 {
		if _, err := store.Peer().Campaign(ctx, backend.Candidate{Election: memberElection(group, k), Identity: fmt.Sprint("m", k), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}

	hs, errs := readHolders(ctx, b, n, readParallelism, func(p int) string { return Election(group, p) })
	if got, single := b.batches.Load(), b.singles.Load(); got != 1 || single != 0 {
		t.Errorf("reading %d holders: %d batched and %d single reads; want 1 and 0", n, got, single)
	}
	for p := range n {
		want := ""
		if p%2 == 0 {
			want = fmt.Sprint("w", p)
		}
		if errs[p] != nil || hs[p].Identity != want {
			t.Errorf("partition %d: got (%+v, %v); want holder %q", p, hs[p], errs[p], want)
		}
	}

	// A first scan knows no slot: it reads two chunks, finds members in
	// the first, none in the second, and stops. A scan knowing the list
	// reads it in one call: the chunk holding the highest slot taken and
	// one more.
	prev, _, err := scanSlots(ctx, b, group, DefaultMaxMembers, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	b.batches.Store(0)
	slots, read, err := scanSlots(ctx, b, group, DefaultMaxMembers, prev, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, single := b.batches.Load(), b.singles.Load(); got != 1 || single != 0 {
		t.Errorf("scanning the member list: %d batched and %d single reads; want 1 and 0", got, single)
	}
	if want := 2 * spareSlots; len(slots) != want || len(read) != want {
		t.Fatalf("scan read %d slots (%d marked); want %d: the chunk of %d holding the highest taken, and the next", len(slots), len(read), want, spareSlots)
	}
	for k := range 3 {
		if slots[k].identity != fmt.Sprint("m", k) || !read[k] {
			t.Errorf("slot %d: got %+v (read %v); want m%d", k, slots[k], read[k], k)
		}
	}
}
