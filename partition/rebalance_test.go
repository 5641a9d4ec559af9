package partition

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// countingStore records the partition elections a member campaigns for and
// counts its Leader reads of partition elections; its reads take delay.
type countingStore struct {
	backend.Backend
	delay time.Duration
	reads *atomic.Int64

	mu   sync.Mutex
	camp map[int]bool
}

func (s *countingStore) Leader(ctx context.Context, election string) (backend.Holder, error) {
	time.Sleep(s.delay)
	if strings.Contains(election, "/p/") {
		s.reads.Add(1)
	}
	return s.Backend.Leader(ctx, election)
}

func (s *countingStore) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	var p int
	if _, err := fmt.Sscanf(c.Election[strings.LastIndex(c.Election, "/p/")+3:], "%d", &p); err == nil && strings.Contains(c.Election, "/p/") {
		s.mu.Lock()
		s.camp[p] = true
		s.mu.Unlock()
	}
	return s.Backend.Campaign(ctx, c)
}

// TestJoinSlowFirstReading: a joiner whose first reading of the holders
// outlasts two polls waits for it before it campaigns, and then campaigns
// only for the partitions the others hand it. It used to settle after two
// polls as in a cold start, placing from nothing: it waited in the
// campaigns of partitions the others kept, and found those handed to it
// only at its next reading.
func TestJoinSlowFirstReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 512
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		ms := startBalanced(t, g, store, "j", n, 6, "j")
		time.Sleep(10 * time.Second)
		before := g.owners(n)
		// 8 probe reads and 512 reads 64 at a time, 200 ms each: a first
		// reading of about 1.8 s, more than two polls (1 s).
		js := &countingStore{Backend: store.Peer(), delay: 200 * time.Millisecond, reads: new(atomic.Int64), camp: map[int]bool{}}
		ms = append(ms, start(t, js, "j", n, g.options("j6")))
		after := placedOwners("j", n, ids(ms), before)
		join := until(t, time.Minute, func() bool { return slices.Equal(g.owners(n), after) })
		var stray []int
		js.mu.Lock()
		for p := range js.camp {
			if after[p] != "j6" {
				stray = append(stray, p)
			}
		}
		js.mu.Unlock()
		slices.Sort(stray)
		t.Logf("join %v; campaigns for partitions not handed over: %d", join, len(stray))
		if len(stray) > 0 {
			t.Errorf("the joiner campaigned for %d partitions the others kept (%v): it placed before its first reading was in", len(stray), stray)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestLeaveReadsNothing: after a graceful leave, the members place the
// leaver's partitions from what they know and take them within a poll;
// none reads every partition's holder. Each used to read all n at once as
// it applied the change, which on a loaded store delayed the one reading
// that mattered by seconds.
func TestLeaveReadsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 512
		g := newLedger(t)
		store := memory.New()
		defer store.Close()
		reads := new(atomic.Int64)
		var ms []*member
		for i := range 6 {
			s := &countingStore{Backend: store.Peer(), reads: reads, camp: map[int]bool{}}
			ms = append(ms, start(t, s, "l", n, g.options(fmt.Sprintf("l%d", i))))
		}
		until(t, 5*time.Minute, func() bool { return balanced(g, "l", n, ids(ms)) })
		time.Sleep(10 * time.Second) // steady state
		before := g.owners(n)
		read := reads.Load()
		ms[2].stop(t)
		ms = slices.Delete(ms, 2, 3)
		leave := until(t, time.Minute, func() bool { return leftOnlyOwn(g, "l", n, ids(ms), before) })
		time.Sleep(5 * time.Second)
		got := reads.Load() - read
		t.Logf("leave %v; partition holders read: %d", leave, got)
		if got >= n {
			t.Errorf("the members read %d partition holders after the leave; want < %d (no member reads them all)", got, n)
		}
		if leave > time.Second {
			t.Errorf("leave took %v; want ≤ 1 s (PollInterval 500 ms and a scan)", leave)
		}
		for _, m := range ms {
			m.stop(t)
		}
		g.checkRevoked()
	})
}

// TestLeaveNoticedAtOnce: on a backend that watches, the members notice a
// graceful leave when the leaver releases its membership slot, not at their
// next poll, whatever the phase of the leave against their polls: the
// leaver's partitions are owned again, and the group balanced over the
// members left, within a few round trips. Balanced, not a placement computed
// from the owners before the leave: a member whose view placed one of the
// leaver's partitions on itself keeps its campaign for it after a newer view
// places it elsewhere (keeps, in campaign.go), and a kept campaign that wins
// stays where it won within its member's quota, so which member ends up
// with such a partition depends on the members' timing.
func TestLeaveNoticedAtOnce(t *testing.T) {
	for _, phase := range []time.Duration{0, 130 * time.Millisecond, 260 * time.Millisecond, 390 * time.Millisecond} {
		t.Run(phase.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 64
				g := newLedger(t)
				store := memory.New()
				defer store.Close()
				ms := startBalanced(t, g, store, "w", n, 4, "w")
				time.Sleep(10*time.Second + phase)
				before := g.owners(n)
				ms[1].stop(t)
				ms = slices.Delete(ms, 1, 2)
				defer func() {
					if t.Failed() {
						t.Logf("owners before the leave: %v\nowners now: %v", before, g.owners(n))
					}
				}()
				leave := until(t, time.Minute, func() bool { return balanced(g, "w", n, ids(ms)) })
				t.Logf("leave %v", leave)
				if leave > 100*time.Millisecond {
					t.Errorf("leave took %v; want ≤ 100 ms: the members waited for their next poll", leave)
				}
				for _, m := range ms {
					m.stop(t)
				}
				g.checkRevoked()
			})
		})
	}
}
