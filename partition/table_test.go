package partition

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

func TestReadTable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 40
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := startBalanced(t, g, store, "tab", n, 3, "t")
		want := g.owners(n)
		tab, err := ReadTable(context.Background(), store, "tab", n)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Members) != 3 || len(tab.Partitions) != n {
			t.Fatalf("table has %d members and %d partitions; want 3 and %d", len(tab.Members), len(tab.Partitions), n)
		}
		total := 0
		for _, m := range tab.Members {
			total += m.Owned
			if m.Owned != m.Placed {
				t.Errorf("member %s owns %d, placed %d; want equal once settled", m.Identity, m.Owned, m.Placed)
			}
		}
		if total != n {
			t.Errorf("members own %d partitions in total; want %d", total, n)
		}
		for _, o := range tab.Partitions {
			if o.Owner != want[o.Partition] || o.Placed != want[o.Partition] || o.Token == 0 {
				t.Errorf("partition %d: %+v; want owner and placed %s with a token", o.Partition, o, want[o.Partition])
			}
		}
		for _, m := range ms {
			m.stop(t)
		}
		tab, err = ReadTable(context.Background(), store, "tab", n)
		if err != nil {
			t.Fatal(err)
		}
		if len(tab.Members) != 0 || tab.Partitions[0].Owner != "" {
			t.Errorf("after every member left: %d members, partition 0 owned by %q; want none", len(tab.Members), tab.Partitions[0].Owner)
		}
	})
}

// TestMembersPastAGap: a member holding a slot beyond a run of more than
// spareSlots free slots is still seen by a newcomer.
func TestMembersPastAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		far := memberElection("gap", spareSlots+3)
		l, err := store.Campaign(ctx, backend.Candidate{Election: far, Identity: "far", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		g := newLedger(t)
		m := start(t, store.Peer(), "gap", 4, g.options("near"))
		until(t, time.Minute, func() bool { return len(m.a.Members()) == 2 })
		if got := fmt.Sprint(m.a.Members()); got != "[far near]" {
			t.Errorf("Members() = %s; want [far near]", got)
		}
		m.stop(t)
		_ = l.Release(ctx)
	})
}

// TestCostPerPartition: holding many partitions costs no goroutine per
// partition (OnAssigned returns at once; renewals run in batches) and
// little memory.
func TestCostPerPartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1024
		store := memory.New()
		defer store.Close()
		before := runtime.NumGoroutine()
		var ms0 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms0)
		o := &Options{Identity: "solo", Logger: discard(), OnAssigned: func(context.Context, Assignment) {}}
		m := start(t, store.Peer(), "cost", n, o)
		until(t, time.Minute, func() bool { return len(m.a.Owned()) == n })
		time.Sleep(DefaultTTL) // renewals running
		synctest.Wait()
		var ms1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms1)
		grew := runtime.NumGoroutine() - before
		perPart := float64(int64(ms1.HeapAlloc)-int64(ms0.HeapAlloc)) / n
		t.Logf("%d partitions held: %d more goroutines, %.0f bytes of heap per partition (library and memory driver)", n, grew, perPart)
		if grew > 20 {
			t.Errorf("%d more goroutines while holding %d partitions; want a constant (≤ 20)", grew, n)
		}
		m.stop(t)
	})
}

// flaky fails every Leader read of a membership slot while fail is set.
type flaky struct {
	*memory.Backend
	fail *atomic.Bool
}

func (f flaky) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if f.fail.Load() {
		return backend.Holder{}, errors.New("flaky: no answer")
	}
	return f.Backend.Leader(ctx, election)
}

// TestTransientScanErrors: a member whose reads of the member list fail
// transiently, from its very first poll, keeps running and joins once they
// succeed; ReadTable reports such a failure as an error.
func TestTransientScanErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		fail := new(atomic.Bool)
		fail.Store(true)
		g := newLedger(t)
		m := start(t, flaky{store.Peer(), fail}, "flaky", 4, g.options("f"))
		time.Sleep(5 * time.Second)
		select {
		case err := <-m.done:
			t.Fatalf("Run returned %v on transient read errors; want it to keep trying", err)
		default:
		}
		if _, err := ReadTable(context.Background(), flaky{store.Peer(), fail}, "flaky", 4); err == nil {
			t.Error("ReadTable with failing reads: nil error; want the failure")
		}
		fail.Store(false)
		until(t, time.Minute, func() bool { return len(m.a.Owned()) == 4 })
		m.stop(t)
	})
}
