package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestCrashTakeoverQueued: the membership slot's lease is half the TTL, so
// the survivors drop a crashed member from the list, and wait in the
// campaigns of its partitions, before those partitions' leases expire:
// they own them again within a few milliseconds of the expiry, whatever
// the phase of the crash against the renewals — well within TTL + 1 s.
func TestCrashTakeoverQueued(t *testing.T) {
	for _, phase := range []time.Duration{0, 1700 * time.Millisecond, 4300 * time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 48
				g := newLedger(t)
				store := memory.New()
				defer store.Close()
				ms := startBalanced(t, g, store, "k", n, 4, "k")
				time.Sleep(phase)
				dead := ms[0]
				var expiry time.Time // the latest deadline of the dead member's partitions
				for _, as := range dead.a.Owned() {
					h, err := store.Leader(context.Background(), Election("k", as.Partition))
					if err != nil {
						t.Fatal(err)
					}
					if d := time.Now().Add(h.TTL); d.After(expiry) {
						expiry = d
					}
				}
				dead.b.(*memory.Backend).Crash()
				crashed := time.Now()
				<-dead.done
				ms = ms[1:]
				want := placedOwners("k", n, ids(ms), g.owners(n))
				until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), want) })
				took, late := time.Since(crashed), time.Since(expiry)
				t.Logf("crash: owned again %v after the crash, %v after the last lease expired", took, late)
				if late > 50*time.Millisecond {
					t.Errorf("partitions owned again %v after their leases expired; want ≤ 50 ms: the survivors were not waiting in their campaigns", late)
				}
				if took > DefaultTTL+time.Second {
					t.Errorf("partitions owned again %v after the crash; want ≤ TTL + 1 s", took)
				}
				for _, m := range ms {
					m.stop(t)
				}
				g.checkRevoked()
			})
		})
	}
}

// slowReads is a backend whose Leader reads take delay: a loaded store.
type slowReads struct {
	backend.Backend
	delay time.Duration
}

func (s slowReads) Leader(ctx context.Context, election string) (backend.Holder, error) {
	time.Sleep(s.delay)
	return s.Backend.Leader(ctx, election)
}

// TestRebalanceSlowReads: on a store whose reads are slow, a join and a
// graceful leave still complete within about a poll and a scan of the
// member slots: the members place at once from the placement they last
// computed, and the joiner from one reading of the holders, instead of
// waiting for fresh readings of every partition's holder.
func TestRebalanceSlowReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 512
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		peer := func() backend.Backend { return slowReads{store.Peer(), 50 * time.Millisecond} }
		var ms []*member
		for i := range 6 {
			ms = append(ms, start(t, peer(), "s", n, g.options(fmt.Sprintf("s%d", i))))
		}
		until(t, 5*time.Minute, func() bool { return balanced(g, "s", n, ids(ms)) })
		time.Sleep(10 * time.Second) // steady state
		before := g.owners(n)
		ms = append(ms, start(t, peer(), "s", n, g.options("s6")))
		after := placedOwners("s", n, ids(ms), before)
		join := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), after) })

		time.Sleep(10 * time.Second)
		leaver := ms[2]
		leaver.stop(t)
		ms = slices.Delete(ms, 2, 3)
		final := placedOwners("s", n, ids(ms), after)
		leave := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), final) })
		// A reading of the 512 holders takes 512/32 × 50 ms = 800 ms; a
		// scan of the member slots about 150 ms.
		t.Logf("join %v, leave %v", join, leave)
		if join > 1500*time.Millisecond {
			t.Errorf("join took %v; want ≤ 1.5 s (a poll, a scan and one reading of the holders)", join)
		}
		if leave > time.Second {
			t.Errorf("leave took %v; want ≤ 1 s (PollInterval 500 ms and a scan; no reading of the holders)", leave)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// noJoins is a backend that refuses, while blocked is set, every campaign
// for a membership slot with a transient error.
type noJoins struct {
	backend.Backend
	blocked *atomic.Bool
}

func (b noJoins) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if b.blocked.Load() && strings.Contains(c.Election, "/m/") {
		return nil, errors.New("store unavailable")
	}
	return b.Backend.Campaign(ctx, c)
}

// TestMembershipLapseKeepsPartitions: a member whose membership slot lapses
// (its lease dropped at the store) and that cannot rejoin for a while keeps
// the partitions it holds, under their own leases: nothing moves, and once
// it is back the others give up the campaigns they waited in.
func TestMembershipLapseKeepsPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 48
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		var blocked atomic.Bool
		var ms []*member
		for i := range 3 {
			ms = append(ms, start(t, noJoins{store.Peer(), &blocked}, "r", n, g.options(fmt.Sprintf("r%d", i))))
		}
		until(t, time.Minute, func() bool { return balanced(g, "r", n, ids(ms)) })
		before, count := g.owners(n), g.count()
		tab, err := ReadTable(context.Background(), store, "r", n)
		if err != nil {
			t.Fatal(err)
		}
		lapsed := tab.Members[0].Identity
		blocked.Store(true)
		if !store.Expire(memberElection("r", tab.Members[0].Slot)) {
			t.Fatalf("slot %d of %s not held", tab.Members[0].Slot, lapsed)
		}
		time.Sleep(4 * time.Second) // it notices, fails to rejoin; the others see it gone
		for _, m := range ms {
			if m.id != lapsed && slices.Contains(m.a.Members(), lapsed) {
				t.Errorf("%s: Members() = %v; want %s gone", m.id, m.a.Members(), lapsed)
			}
		}
		blocked.Store(false)
		time.Sleep(10 * time.Second) // it rejoins
		if got := g.owners(n); !slices.Equal(got, before) || g.count() != count {
			t.Errorf("after %s's slot lapsed: %d assignments, %d partitions moved; want none",
				lapsed, g.count()-count, moved(before, got))
		}
		for _, m := range ms {
			if got := m.a.Members(); len(got) != 3 {
				t.Errorf("%s: Members() = %v; want all 3 back", m.id, got)
			}
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestRebalanceAtScale: at the size of the benchmark targets (1,024
// partitions over 10 members, reads taking 5 ms), joins and graceful
// leaves complete within two polls, and a leave moves nothing between the
// members that stay: they agree on who takes which of the leaver's
// partitions.
func TestRebalanceAtScale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 1024
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		peer := func() backend.Backend { return slowReads{store.Peer(), 5 * time.Millisecond} }
		var ms []*member
		for i := range 10 {
			ms = append(ms, start(t, peer(), "L", n, g.options(fmt.Sprintf("m%02d", i))))
		}
		until(t, 5*time.Minute, func() bool { return balanced(g, "L", n, ids(ms)) })
		for r := range 3 {
			before := g.owners(n)
			j := start(t, peer(), "L", n, g.options(fmt.Sprintf("j%d", r)))
			after := placedOwners("L", n, append(ids(ms), j.id), before)
			join := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), after) })
			j.stop(t)
			leave := until(t, time.Minute, func() bool { return balanced(g, "L", n, ids(ms)) })
			final, among := g.owners(n), 0
			for p := range final {
				if after[p] != j.id && final[p] != after[p] {
					among++
				}
			}
			t.Logf("round %d: join %v, leave %v", r, join, leave)
			if join > time.Second || leave > time.Second {
				t.Errorf("round %d: join %v, leave %v; want each ≤ 1 s (2 × PollInterval)", r, join, leave)
			}
			if among != 0 {
				t.Errorf("round %d: the leave moved %d partitions between the members that stay; want 0", r, among)
			}
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}
