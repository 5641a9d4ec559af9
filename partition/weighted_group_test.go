package partition

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// weighted returns the ledger's options for member id with weight w.
func (g *ledger) weighted(id string, w int) *Options {
	o := g.options(id)
	o.Weight = w
	return o
}

// loadsOf returns how many of n partitions each of ids owns, by the
// ledger, and whether every partition is owned by one of them.
func loadsOf(g *ledger, n int, ids ...string) ([]int, bool) {
	load := make([]int, len(ids))
	all := true
	for _, id := range g.owners(n) {
		i := slices.Index(ids, id)
		if i < 0 {
			all = false
			continue
		}
		load[i]++
	}
	return load, all
}

// slotHolders returns the identities the membership slots of group are
// held under, as the backend reports them.
func slotHolders(t *testing.T, b backend.Backend, group string) []string {
	t.Helper()
	var out []string
	for k := range spareSlots {
		h, err := b.Leader(context.Background(), memberElection(group, k))
		switch {
		case errors.Is(err, backend.ErrNoLeader):
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, h.Identity)
		}
	}
	slices.Sort(out)
	return out
}

// TestWeightedColdStart: members of weights 1, 1 and 2 starting together
// end with 4, 4 and 8 of 16 partitions, each partition owned once; the
// member of weight 1 holds its slot under its plain identity.
func TestWeightedColdStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 16
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := []*member{
			start(t, store.Peer(), "wc", n, g.weighted("a", 1)),
			start(t, store.Peer(), "wc", n, g.weighted("b", 0)), // the default: 1
			start(t, store.Peer(), "wc", n, g.weighted("c", 2)),
		}
		took := until(t, time.Minute, func() bool {
			l, all := loadsOf(g, n, "a", "b", "c")
			return all && slices.Equal(l, []int{4, 4, 8})
		})
		t.Logf("weights 1, 1, 2 own 4, 4, 8 of %d partitions after %v (%d assignments)", n, took, g.count())
		if got := slotHolders(t, store, "wc"); !slices.Equal(got, []string{"a", "b", "c;weight=2"}) {
			t.Errorf("membership slots held under %q; want a, b and c;weight=2", got)
		}
		for _, m := range ms {
			if got := m.a.Members(); !slices.Equal(got, []string{"a", "b", "c"}) {
				t.Errorf("%s: Members() = %v; want [a b c]", m.id, got)
			}
		}
		// Settled: five polls go by on the fake clock without a move.
		changes := g.count()
		time.Sleep(5 * DefaultPollInterval)
		if l, all := loadsOf(g, n, "a", "b", "c"); !all || !slices.Equal(l, []int{4, 4, 8}) || g.count() != changes {
			t.Errorf("five polls later: loads %v (all owned: %v), %d more assignments; want 4, 4, 8 and none", l, all, g.count()-changes)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestWeightedJoin: a member of weight 2 joining two of weight 1 takes
// half of the 16 partitions, as the placement computes them, from the two;
// nothing moves between them.
func TestWeightedJoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 16
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := startBalanced(t, g, store, "wj", n, 2, "m")
		before := g.owners(n)
		changes := g.count()
		ms = append(ms, start(t, store.Peer(), "wj", n, g.weighted("m2", 2)))
		ids := []string{"m0", "m1", "m2"}
		after := make([]string, n)
		for p, i := range PlaceWeighted("wj", n, ids, []int{1, 1, 2}, before) {
			after[p] = ids[i]
		}
		if l := loads(PlaceWeighted("wj", n, ids, []int{1, 1, 2}, before), 3); !slices.Equal(l, []int{4, 4, 8}) {
			t.Fatalf("placement loads %v; want [4 4 8]", l)
		}
		took := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), after) })
		for p := range before {
			if before[p] != after[p] && after[p] != "m2" {
				t.Errorf("partition %d moved from %s to %s; want only moves to the joiner", p, before[p], after[p])
			}
		}
		if got, want := g.count()-changes, moved(before, after); got != want {
			t.Errorf("join: %d assignments; want %d, the partitions the placement moves", got, want)
		}
		t.Logf("join of weight 2: %d partitions moved in %v", g.count()-changes, took)
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestReadTableWeights: ReadTable shows each member's weight and places
// with the weights; a slot held under a malformed weight counts as an
// identity of weight 1.
func TestReadTableWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 12
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := []*member{
			start(t, store.Peer(), "wt", n, g.weighted("light", 1)),
			start(t, store.Peer(), "wt", n, g.weighted("heavy", 3)),
		}
		until(t, time.Minute, func() bool {
			l, all := loadsOf(g, n, "light", "heavy")
			return all && slices.Equal(l, []int{3, 9})
		})
		tab, err := ReadTable(context.Background(), store, "wt", n)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]MemberLoad{}
		for _, m := range tab.Members {
			got[m.Identity] = m
		}
		for _, want := range []MemberLoad{{Identity: "light", Weight: 1, Owned: 3, Placed: 3}, {Identity: "heavy", Weight: 3, Owned: 9, Placed: 9}} {
			m := got[want.Identity]
			want.Slot = m.Slot
			if m != want || len(tab.Members) != 2 {
				t.Errorf("table line of %s: %+v; want %+v (of 2 lines)", want.Identity, m, want)
			}
		}
		for _, o := range tab.Partitions {
			if o.Owner == "" || o.Owner != o.Placed {
				t.Errorf("partition %+v; want owned where placed", o)
			}
		}

		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()

		// Slots held by other programs: one under a malformed weight is a
		// member of weight 1 named by the whole string.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for k, id := range map[int]string{3: "odd;weight=07", 5: "y;weight=3"} {
			l, err := store.Campaign(ctx, backend.Candidate{Election: memberElection("wt", k), Identity: id, TTL: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release(ctx)
		}
		tab, err = ReadTable(ctx, store, "wt", n)
		if err != nil {
			t.Fatal(err)
		}
		want := []MemberLoad{{Identity: "odd;weight=07", Slot: 3, Weight: 1, Placed: 3}, {Identity: "y", Slot: 5, Weight: 3, Placed: 9}}
		if !slices.Equal(tab.Members, want) {
			t.Errorf("slots held under odd;weight=07 and y;weight=3: members %+v; want %+v", tab.Members, want)
		}
	})
}
