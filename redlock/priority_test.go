package redlock

import (
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestPriority runs the preferred-leader checks on the five test masters:
// each candidate on clients and a Backend of its own, as separate
// processes. The TTL bounds the hand-over (TTL/2) and the renewal stalls a
// leader survives in the windows where no term may change: 5 s leaves a
// loaded machine seconds for both. The subtests run in parallel, and so
// does the test: it faults no node, and its elections are its own.
func TestPriority(t *testing.T) {
	t.Parallel()
	prioritytest.Run(t, 5*time.Second, makeBackend)
}

// makeBackend's Backends count a restarted node at once: TestPriority runs
// in parallel, so after the serial tests whose cleanups restart nodes, and
// restarts none itself.
func makeBackend(t testing.TB) backend.Backend {
	b, err := New(newNodes(t, testenv.RedisAddrs(t)).clients, &Options{RequestTimeout: testRequestTimeout, RestartDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// BenchmarkPreemption: the time from a preferred candidate's Run to its
// election while a lower one leads.
func BenchmarkPreemption(b *testing.B) { prioritytest.Bench(b, 2*time.Second, makeBackend) }
