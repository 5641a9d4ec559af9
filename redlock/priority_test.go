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
// processes.
func TestPriority(t *testing.T) {
	addrs := testenv.RedisAddrs(t)
	prioritytest.Run(t, 2*time.Second, func(t *testing.T) backend.Backend {
		b, err := New(newNodes(t, addrs).clients, &Options{RequestTimeout: testRequestTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
