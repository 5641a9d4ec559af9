package zookeeper

import (
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
)

// TestPriority runs the preferred-leader checks on the test ensemble: each
// candidate on a Backend (and session) of its own, as separate processes.
// The TTL is 6 s: a lease's Deadline trails its last answer by the report
// lag and more (see TestHeldDeadlineStaysAhead), and an Elector steps down
// when a stall of its host keeps its next renewal past the Deadline less the
// SafetyMargin: a stall of half a second can do that at a 2 s TTL, one of
// about a second at 6 s.
func TestPriority(t *testing.T) {
	t.Parallel()
	prioritytest.Run(t, 6*time.Second, harnessMaker(t))
}

// harnessMaker returns a maker of Backends on the test ensemble.
func harnessMaker(tb testing.TB) prioritytest.Maker {
	h := newHarness(tb)
	tb.Cleanup(h.Close)
	return func(t testing.TB) backend.Backend {
		b, _, err := h.newBackend(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
}

// BenchmarkPreemption: the time from a preferred candidate's Run to its
// election while a lower one leads.
func BenchmarkPreemption(b *testing.B) { prioritytest.Bench(b, 2*time.Second, harnessMaker(b)) }
