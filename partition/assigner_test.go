package partition

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestPlacementReached: every partition ends up owned by the member the
// placement names, once, with the placement's balance.
func TestPlacementReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 64
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		var ms []*member
		for i := range 5 {
			id := fmt.Sprintf("w%d", i)
			ms = append(ms, start(t, store.Peer(), "jobs", n, g.options(id)))
		}
		took := until(t, time.Minute, func() bool { return balanced(g, "jobs", n, ids(ms)) })
		t.Logf("5 members own their quotas of %d partitions after %v", n, took)
		// Members whose first join attempts collide on a slot join a poll
		// or two late: the others, settled on a shorter list, hand some
		// partitions on once. Never more than one extra move each.
		if g.count() < n || g.count() > 2*n {
			t.Errorf("%d assignments to reach the placement; want %d to %d", g.count(), n, 2*n)
		}
		want := g.owners(n)
		for _, m := range ms {
			got := m.a.Owned()
			if len(got) > 13 {
				t.Errorf("%s owns %d partitions; want ≤ ceil(64/5) = 13", m.id, len(got))
			}
			for _, as := range got {
				if want[as.Partition] != m.id || as.Group != "jobs" || as.Token == 0 {
					t.Errorf("%s: Owned has %+v; the ledger says %s owns it", m.id, as, want[as.Partition])
				}
			}
			if got := m.a.Members(); !slices.Equal(got, []string{"w0", "w1", "w2", "w3", "w4"}) {
				t.Errorf("%s: Members() = %v; want w0…w4", m.id, got)
			}
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestJoinAndLeave: a join moves only what the placement moves, each
// partition handed over once; a graceful leave hands the leaver's
// partitions over within one poll, without waiting for a TTL.
func TestJoinAndLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 256
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := startBalanced(t, g, store, "q", n, 4, "m")
		before := g.owners(n)
		changes := g.count()

		ms = append(ms, start(t, store.Peer(), "q", n, g.options("m4")))
		after := placedOwners("q", n, ids(ms), before)
		took := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), after) })
		if got, want := g.count()-changes, moved(before, after); got != want {
			t.Errorf("join: %d assignments; want %d, the partitions the placement moves", got, want)
		}
		if took > 2*time.Second {
			t.Errorf("join took %v to complete; want ≤ 2 s (PollInterval 500 ms)", took)
		}
		t.Logf("join: %d partitions moved in %v", g.count()-changes, took)

		changes = g.count()
		leaver := ms[1]
		leaver.stop(t)
		ms = slices.Delete(ms, 1, 2)
		final := placedOwners("q", n, ids(ms), after)
		for p := range after {
			if after[p] != final[p] && after[p] != leaver.id {
				t.Errorf("leave: partition %d placed on %s, was on %s; want only the leaver's to move", p, final[p], after[p])
			}
		}
		took = until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), final) })
		if got, want := g.count()-changes, moved(after, final); got != want {
			t.Errorf("leave: %d assignments; want %d, the partitions the placement moves", got, want)
		}
		if took > 2*time.Second {
			t.Errorf("leave took %v to complete; want ≤ 2 s", took)
		}
		t.Logf("leave: %d partitions moved in %v", g.count()-changes, took)
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestHandOverOrder: the old owner's ctx is cancelled, its OnAssigned
// returns, the lease is released and OnRevoked called with ErrMoved, and
// only then does the new owner's OnAssigned start — at the same instant.
func TestHandOverOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		var (
			log      []string
			returned time.Time
			assigned time.Time
			reason   error
		)
		var mu sync.Mutex
		rec := func(s string) { mu.Lock(); defer mu.Unlock(); log = append(log, s) }
		opts := func(id string) *Options {
			return &Options{
				Identity: id,
				Logger:   slog.New(slog.DiscardHandler),
				OnAssigned: func(ctx context.Context, a Assignment) {
					rec(fmt.Sprintf("%s assigned t%d", id, a.Token))
					mu.Lock()
					assigned = time.Now()
					mu.Unlock()
					<-ctx.Done()
					time.Sleep(300 * time.Millisecond) // the application drains
					rec(fmt.Sprintf("%s returned t%d", id, a.Token))
					mu.Lock()
					returned = time.Now()
					mu.Unlock()
				},
				OnRevoked: func(a Assignment, r error) {
					rec(fmt.Sprintf("%s revoked t%d", id, a.Token))
					mu.Lock()
					reason = r
					mu.Unlock()
				},
				Observer: func(ev elector.Event) {
					switch ev.Kind {
					case elector.EventEnded, elector.EventRelease, elector.EventElected:
						rec(fmt.Sprintf("%s %v t%d", id, ev.Kind, ev.Term.Token))
					}
				},
			}
		}
		a := start(t, store.Peer(), "one", 1, opts("a"))
		until(t, time.Minute, func() bool { return len(a.a.Owned()) == 1 })
		// Find an identity the placement prefers to "a" for partition 0.
		var id string
		for i := 0; id == ""; i++ {
			c := fmt.Sprintf("b%d", i)
			if placedOwners("one", 1, []string{"a", c}, []string{"a"})[0] == c {
				id = c
			}
		}
		b := start(t, store.Peer(), "one", 1, opts(id))
		until(t, time.Minute, func() bool { return len(b.a.Owned()) == 1 })
		// The release event and OnRevoked come after the release returned,
		// so they may be recorded before or after the new owner's
		// OnAssigned starts; the rest is ordered.
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		late := []string{"a release t1", "a revoked t1"}
		got := slices.DeleteFunc(slices.Clone(log), func(s string) bool { return slices.Contains(late, s) })
		ended := slices.Contains(log, late[0]) && slices.Contains(log, late[1]) &&
			slices.Index(log, late[0]) < slices.Index(log, late[1])
		want := []string{"a elected t1", "a assigned t1", "a ended t1", "a returned t1", id + " elected t2", id + " assigned t2"}
		if !slices.Equal(got, want) || !ended {
			t.Errorf("hand-over order:\n got %q\nwant %q and %q in order", log, want, late)
		}
		if !errors.Is(reason, ErrMoved) || !errors.Is(reason, elector.ErrResigned) {
			t.Errorf("OnRevoked reason %v; want ErrMoved (wrapping elector.ErrResigned)", reason)
		}
		if gap := assigned.Sub(returned); gap != 0 {
			t.Errorf("new owner assigned %v after the old one returned; want at once (0 on the memory driver)", gap)
		}
		if len(a.a.Owned()) != 0 {
			t.Errorf("old owner still reports %v owned", a.a.Owned())
		}
		mu.Unlock()
		a.stop(t)
		b.stop(t)
		mu.Lock()
	})
}

// TestCrashTakeover: a member whose process dies (its leases stay at the
// store until they expire) has its partitions owned again within TTL + 1 s.
func TestCrashTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 32
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := startBalanced(t, g, store, "c", n, 3, "c")
		dead := ms[0]
		dead.b.(*memory.Backend).Crash()
		crashed := time.Now()
		if err := <-dead.done; !errors.Is(err, backend.ErrClosed) {
			t.Errorf("crashed member's Run returned %v; want ErrClosed", err)
		}
		ms = ms[1:]
		want := placedOwners("c", n, ids(ms), g.owners(n))
		until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), want) })
		took := time.Since(crashed)
		t.Logf("crash: partitions owned again %v after the crash (TTL %v)", took, DefaultTTL)
		if took > DefaultTTL+time.Second {
			t.Errorf("partitions owned again %v after the crash; want ≤ TTL + 1 s = %v", took, DefaultTTL+time.Second)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestDisagreeingViews: members that compute different placements (here
// through different numbers of partitions, which the API forbids) contend
// for some partitions; the backend still lets exactly one own each at a
// time.
func TestDisagreeingViews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 128
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		var ms []*member
		for i, k := range []int{n, 100, n, 64} {
			ms = append(ms, start(t, store.Peer(), "d", k, g.options(fmt.Sprintf("d%d", i))))
		}
		time.Sleep(time.Minute) // the ledger fails the test on any overlap meanwhile
		owned := 0
		for _, id := range g.owners(n) {
			if id != "" {
				owned++
			}
		}
		t.Logf("%d of %d partitions owned under disagreeing placements", owned, n)
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestLeaseLost: a partition whose lease the store drops is revoked with
// ErrLeaseLost at once, then won again with a higher token.
func TestLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		var (
			mu      sync.Mutex
			reasons []error
		)
		o := g.options("solo")
		revoked := o.OnRevoked
		o.OnRevoked = func(a Assignment, r error) { revoked(a, r); mu.Lock(); reasons = append(reasons, r); mu.Unlock() }
		m := start(t, store.Peer(), "l", 2, o)
		until(t, time.Minute, func() bool { return len(m.a.Owned()) == 2 })
		first := m.a.Owned()[1]
		store.Expire(Election("l", 1))
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(reasons) != 1 || !errors.Is(reasons[0], elector.ErrLeaseLost) || !errors.Is(reasons[0], backend.ErrLost) {
			t.Fatalf("revocations after the store dropped the lease: %v; want one wrapping ErrLeaseLost and backend.ErrLost", reasons)
		}
		until(t, time.Minute, func() bool { return len(m.a.Owned()) == 2 })
		if again := m.a.Owned()[1]; again.Token <= first.Token {
			t.Errorf("re-won partition 1 with token %d; want > %d", again.Token, first.Token)
		}
		mu.Unlock()
		m.stop(t)
		mu.Lock()
		g.checkRevoked()
	})
}

// TestRenewal: leases are renewed for many TTLs with nothing revoked.
func TestRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		m := start(t, store.Peer(), "r", 16, g.options("r"))
		until(t, time.Minute, func() bool { return len(m.a.Owned()) == 16 })
		changes := g.count()
		time.Sleep(10 * DefaultTTL)
		if len(m.a.Owned()) != 16 || g.count() != changes {
			t.Errorf("after 10 TTLs: %d owned, %d new assignments; want 16 owned and none", len(m.a.Owned()), g.count()-changes)
		}
		m.stop(t)
		g.checkRevoked()
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		m := start(t, store, "twice", 1, &Options{Identity: "x", Logger: slog.New(slog.DiscardHandler)})
		synctest.Wait()
		if err := m.a.Run(context.Background()); err != ErrRunning {
			t.Errorf("second Run: %v; want ErrRunning", err)
		}
		m.stop(t)
	})
}

func TestNewValidates(t *testing.T) {
	b := memory.New()
	defer b.Close()
	for _, c := range []struct {
		group string
		n     int
		o     Options
		want  string
	}{
		{"g", 0, Options{}, "number of partitions is 0"},
		{"g", MaxPartitions + 1, Options{}, "want in [1, 65536]"},
		{"/g", 1, Options{}, "empty segment"},
		{"g", 1, Options{TTL: time.Millisecond}, "Options.TTL is 1ms"},
		{"g", 1, Options{TTL: 876000 * time.Hour}, "Options.TTL is 876000h0m0s; want between 100ms and 1h0m0s"},
		{"g", 1, Options{SafetyMargin: 8 * time.Second}, "Options.SafetyMargin"},
		{"g", 1, Options{RenewInterval: 13 * time.Second}, "Options.RenewInterval"},
		{"g", 1, Options{PollInterval: 6 * time.Second}, "Options.PollInterval"},
		{"g", 1, Options{MaxMembers: 2000}, "Options.MaxMembers is 2000; want in [1, 1024]"},
		{"g", 1, Options{Identity: "a\nb"}, "control character"},
	} {
		_, err := New(b, c.group, c.n, &c.o)
		if err == nil || !errors.Is(err, backend.ErrInvalid) || !contains(err.Error(), c.want) {
			t.Errorf("New(%q, %d, %+v) = %v; want an ErrInvalid naming %q", c.group, c.n, c.o, err, c.want)
		}
	}
	if _, err := New(nil, "g", 1, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("New(nil backend) = %v; want ErrInvalid", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// TestLongDrain: a partition handed over is kept renewed while its
// OnAssigned drains, even for several TTLs, whether it moves to another
// member or Run stops, so the next owner never starts before the old one
// has returned.
func TestLongDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		g := newLedger(t)
		rec := func(id string) *Options {
			o := g.options(id)
			o.OnAssigned = func(ctx context.Context, a Assignment) {
				g.assigned(id, a)
				<-ctx.Done()
				time.Sleep(3 * DefaultTTL) // the application drains for 3 TTLs
				g.mu.Lock()
				delete(g.active, a.Partition)
				g.returned[key(id, a)] = true
				g.mu.Unlock()
			}
			return o
		}
		a := start(t, store.Peer(), "drain", 8, rec("a"))
		until(t, time.Minute, func() bool { return len(a.a.Owned()) == 8 })
		b := start(t, store.Peer(), "drain", 8, rec("b"))
		want := placedOwners("drain", 8, []string{"a", "b"}, g.owners(8))
		until(t, 5*DefaultTTL, func() bool { return slices.Equal(g.owners(8), want) })
		c := start(t, store.Peer(), "drain", 8, rec("c"))
		until(t, time.Minute, func() bool { return len(c.a.Members()) == 3 })
		a.stop(t) // a drains for 3 TTLs; b or c must wait for it
		until(t, 5*DefaultTTL, func() bool { return balanced(g, "drain", 8, []string{"b", "c"}) })
		b.stop(t)
		c.stop(t)
		g.checkRevoked()
	})
}
