package integration_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leaderkit/elector/internal/testenv"
)

// TestPartitionRedlockQuorumLoss: five members share 64 partitions on
// Redlock at TTL 5 s; three of the five Redis masters die (a quorum lost:
// every renewal and campaign fails) and come back empty after TTL + 2 s, as
// without AOF. It measures the time from their restart (once they answer)
// until every partition is owned again; the restarted nodes count toward a
// quorum only after their RestartDelay (one TTL), so the bound is
// RestartDelay + TTL, plus 3 s for the shared machine. Then each member
// comes to hold its quota. Not t.Parallel: it kills shared Redis masters.
func TestPartitionRedlockQuorumLoss(t *testing.T) {
	s := partStores()[1]
	if s.name != "redlock" {
		t.Fatalf("partStores()[1] is %s; want redlock", s.name)
	}
	const (
		n   = 64
		ttl = 5 * time.Second
	)
	group := partGroup("quorum")
	g := newPartLedger(t)
	var ms []*partMember
	for i := range 5 {
		ms = append(ms, startPartMember(t, s, group, n, g.options(fmt.Sprintf("q%d", i), ttl)))
	}
	settleBalanced(t, g, group, n, ms, 30*time.Second)
	nodes := []string{"1", "2", "3"}
	back := false
	t.Cleanup(func() {
		for _, k := range nodes {
			if !back {
				testenv.Fault(t, "restart", "redis", k)
			}
		}
	})
	for _, k := range nodes {
		testenv.Fault(t, "kill", "redis", k)
	}
	// They come back without the counters: a winning round whose quorum is
	// the three of them mints token 1 again, as the redlock package
	// documents, so tokens seen before the outage are not compared with
	// those after it.
	g.forgetTokens()
	down := time.Now()
	time.Sleep(ttl + 2*time.Second) // the outage: longer than the TTL, so every lease is lost
	lost := 0
	for _, id := range g.owners(n) {
		if id == "" {
			lost++
		}
	}
	began := time.Now()
	for _, k := range nodes {
		testenv.Fault(t, "restart", "redis", k, "--no-wait")
	}
	back = true
	// The clock starts once every node answers: a node's restart delay
	// counts from its own start, and a loaded host takes seconds to start
	// Redis (the three restart together, then this waits for all).
	testenv.Fault(t, "start", "redis")
	restarted := time.Now()
	t.Logf("the masters answered %v after their restart began", restarted.Sub(began).Round(time.Millisecond))
	t.Logf("%d of %d partitions unowned after %v with 3 of 5 masters down", lost, n, began.Sub(down).Round(time.Millisecond))
	took := allOwned(t, g, n, 2*time.Minute)
	t.Logf("every partition owned again %v after the restart", took.Round(time.Millisecond))
	if bound := 2*ttl + 3*time.Second; took > bound {
		t.Errorf("partitions owned again %v after the masters came back; want ≤ %v (RestartDelay + TTL + 3 s)", took, bound)
	}
	settleBalanced(t, g, group, n, ms, 2*time.Minute)
	t.Logf("each member at its quota %v after the restart", time.Since(restarted).Round(time.Millisecond))
	for _, m := range ms {
		_ = m.stop()
	}
}
