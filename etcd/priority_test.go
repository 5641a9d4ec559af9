package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
)

// TestPriority runs the preferred-leader checks on the test cluster: each
// candidate on a client and Backend of its own, as separate processes. The
// TTL bounds the hand-over (TTL/2) and the renewal stalls a leader survives
// in the windows where no term may change: 5 s leaves a loaded machine
// seconds for both.
func TestPriority(t *testing.T) {
	t.Parallel()
	prioritytest.Run(t, 5*time.Second, makeBackend)
}

func makeBackend(t testing.TB) backend.Backend { return testBackend(t, testClient(t), nil) }

// BenchmarkPreemption: the time from a preferred candidate's Run to its
// election while a lower one leads.
func BenchmarkPreemption(b *testing.B) { prioritytest.Bench(b, 2*time.Second, makeBackend) }

// A registry entry is no candidate to the concurrency package: its
// election stays without a leader, and its campaign wins at once.
func TestRegistryInvisibleToConcurrency(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	name := testName(t)
	// The entry outlives the campaign below: one seen as a candidate
	// keeps it waiting.
	reg, err := b.Register(testCtx(t), backend.Candidate{Election: name, Identity: "alice", TTL: 30 * time.Second, Priority: 5}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Withdraw(testCtx(t)) }()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sess.Close() }()
	upstream := concurrency.NewElection(sess, name)
	if resp, err := upstream.Leader(testCtx(t)); !errors.Is(err, concurrency.ErrElectionNoLeader) {
		t.Fatalf("concurrency Leader beside an entry: got (%v, %v), want ErrElectionNoLeader: entries lie outside <election>/", resp, err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancel()
	if err := upstream.Campaign(ctx, "bob"); err != nil {
		t.Fatalf("concurrency Campaign beside an entry: got %v, want a win at once", err)
	}
	if err := upstream.Resign(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}
