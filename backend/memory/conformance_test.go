package memory

import (
	"context"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
)

// harness puts every Backend on one store. It offers all three fault
// abilities.
type harness struct{ root *Backend }

func (h *harness) MakeBackend(context.Context) (backend.Backend, error) { return h.root.Peer(), nil }
func (h *harness) TTL() time.Duration                                   { return 200 * time.Millisecond }
func (h *harness) Close()                                               { _ = h.root.Close() }
func (h *harness) Crash(b backend.Backend)                              { b.(*Backend).Crash() }
func (h *harness) Isolate(b backend.Backend)                            { b.(*Backend).Isolate() }
func (h *harness) Heal(b backend.Backend)                               { b.(*Backend).Heal() }
func (h *harness) Expire(l backend.Lease)                               { h.root.Expire(l.(*lease).e.name) }

var (
	_ backendtest.Crasher  = (*harness)(nil)
	_ backendtest.Expirer  = (*harness)(nil)
	_ backendtest.Isolator = (*harness)(nil)
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(context.Context, *testing.T) (backendtest.Harness, error) {
		return &harness{root: New()}, nil
	})
}
