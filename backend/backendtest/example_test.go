package backendtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/backend/memory"
)

// harness puts every Backend the suite asks for on one in-memory store; a
// driver's harness would return new clients of its test servers instead.
type harness struct{ store *memory.Backend }

func (h harness) MakeBackend(context.Context) (backend.Backend, error) { return h.store.Peer(), nil }
func (h harness) TTL() time.Duration                                   { return 200 * time.Millisecond }
func (h harness) Close()                                               { _ = h.store.Close() }

// Crash makes the suite's expiry subtests run: the crashed Backend's leases
// lapse after their TTL.
func (h harness) Crash(b backend.Backend) { b.(*memory.Backend).Crash() }

// A driver joins the conformance suite with a harness and one test
// function in its conformance_test.go:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, newHarness)
//	}
func ExampleRun() {
	newHarness := func(context.Context, *testing.T) (backendtest.Harness, error) {
		return harness{store: memory.New()}, nil
	}
	_ = func(t *testing.T) { backendtest.Run(t, newHarness) }
}
