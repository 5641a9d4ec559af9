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
	h := newHarness(t)
	t.Cleanup(h.Close)
	prioritytest.Run(t, 2*time.Second, func(t *testing.T) backend.Backend {
		b, _, err := h.newBackend(nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
