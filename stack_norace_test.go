//go:build !race

package elector

import (
	"context"
	"runtime"
	"testing"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestHeldStackShrinks: the goroutine of a held election's Run, whose
// stack its campaign grew to 8 KB, waits out the term under frames small
// enough for the garbage collector to halve that stack: 4 KB per held
// election, not 8 KB. (The collector halves a parked stack only while the
// goroutine uses less than a quarter of it, less a fixed reserve of 800
// bytes, so that 4 KB is the least a grown stack comes back to.)
//
// The race detector doubles that reserve, and no stack shrinks to 4 KB
// under it: this file is built without -race only, and make test runs its
// tests once more without the race detector.
func TestHeldStackShrinks(t *testing.T) {
	const n = 1000
	store := deepBackend{memory.New()}
	defer store.Close()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	stop := holdElections(t, store, "stack", n, DefaultTTL)
	defer stop()
	for range 3 { // each collection halves a stack once
		runtime.GC()
	}
	runtime.ReadMemStats(&m1)
	per := (int64(m1.StackInuse) - int64(m0.StackInuse)) / n
	t.Logf("%d held elections: %d B of stack each", n, per)
	if per > 6<<10 {
		t.Errorf("%d B of stack per held election, want about 4 KB: the frames a held term waits under must let its Run's grown stack shrink", per)
	}
}

// deepBackend is a memory Backend whose Campaign runs deep (as a driver's
// does through its client library): it grows the calling goroutine's stack
// to 8 KB before it campaigns.
type deepBackend struct{ *memory.Backend }

func (b deepBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	return deepCampaign(ctx, b.Backend, c, 5)
}

//go:noinline
func deepCampaign(ctx context.Context, b *memory.Backend, c backend.Candidate, depth int) (backend.Lease, error) {
	var pad [1024]byte // 5 frames of 1 KB: past a 4 KB stack
	if depth == 0 {
		return b.Campaign(ctx, c)
	}
	pad[depth] = byte(depth)
	l, err := deepCampaign(ctx, b, c, depth-1)
	if pad[depth] != byte(depth) {
		panic("unreachable")
	}
	return l, err
}
