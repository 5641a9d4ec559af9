package partition

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// TestKeepsCampaignBehindDeparted: a member campaigning for a crashed
// member's partition keeps that campaign, until the crashed member's lease
// must have ended, when a change of the member list places the partition
// on another member. That member may not campaign for it (its own view
// places it elsewhere again, or it is still joining), and without the kept
// campaign nobody would take the partition when the lease lapses: in the
// partition chaos on etcd, six partitions of a member killed amid a join
// and two leaves were taken 3.18-3.24 s after the kill (bound TTL + 1 s =
// 3 s), at the next reading of a member that happened to be short. Here
// the new member (c) never runs, so before, the partition stayed unowned.
func TestKeepsCampaignBehindDeparted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const group, n, y = "keep", 6, 5
		const lapse = 2 * time.Second
		store := memory.New()
		defer store.Close()

		// b (a member whose loop does not run) holds 2, 3 and 4, its
		// quota of 3 over {a, b}; a departed member holds y on a lease
		// that lapses in 2 s. a's placement gives a 0, 1 (free) and y.
		b, d := store.Peer(), store.Peer()
		for p, peer := range map[int]*memory.Backend{2: b, 3: b, 4: b, y: d} {
			id, ttl := "b", time.Hour
			if peer == d {
				id, ttl = "d", lapse
			}
			if _, err := peer.Campaign(context.Background(), backend.Candidate{Election: Election(group, p), Identity: id, TTL: ttl}); err != nil {
				t.Fatal(err)
			}
		}
		lapsed := time.Now().Add(lapse)

		g := newLedger(t)
		a, err := New(store.Peer(), group, n, g.options("a"))
		if err != nil {
			t.Fatal(err)
		}
		views, cancel, done := startLoop(a, []string{"", "", "b", "b", "b", "d"}, []string{"a", "b"})

		until(t, time.Second, func() bool { o := g.owners(n); return o[0] == "a" && o[1] == "a" })
		// c joins: quotas fall to 2, a holds 2, and y goes to c, which
		// does not campaign (its loop does not run).
		views <- view{members: []string{"a", "b", "c"}, joined: true, complete: true}
		synctest.Wait()
		if got := Place(group, n, []string{"a", "b", "c"}, []string{"a", "a", "b", "b", "b", ""})[y]; got != 2 {
			t.Fatalf("partition %d placed on member %d after c joined; the test needs it on c", y, got)
		}
		if time.Now().After(lapsed) {
			t.Fatalf("the member list changed %v after the departed member's lease lapsed; want before", time.Since(lapsed))
		}

		// a wins y when the lease lapses, then hands it over to c (over
		// its quota, y ranks below 0 and 1 for a): an extra move, where
		// before nobody took it.
		won := func() bool { g.mu.Lock(); defer g.mu.Unlock(); return g.last[y] > 1 }
		until(t, time.Minute, won)
		took := time.Since(lapsed)
		t.Logf("partition %d won %v after the departed member's lease lapsed", y, took)
		if took > DefaultPollInterval {
			t.Errorf("partition %d won %v after the lease lapsed; want within a poll (%v): the campaign waiting for it is kept", y, took, DefaultPollInterval)
		}
		until(t, time.Minute, func() bool { return g.owners(n)[y] == "" })
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("loop returned %v; want context.Canceled", err)
		}
		g.checkRevoked()
	})
}
