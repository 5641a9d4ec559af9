package zookeeper

import (
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
)

// TestPriority runs the preferred-leader checks on the test ensemble: each
// candidate on a Backend (and session) of its own, as separate processes.
func TestPriority(t *testing.T) {
	prioritytest.Run(t, 2*time.Second, harnessMaker(t))
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
