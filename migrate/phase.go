package migrate

import (
	"fmt"
	"strings"

	"github.com/leaderkit/elector/backend"
)

// Phase is the step of the runbook a replica runs in. Replicas are rolled
// from one phase to the next one at a time; see the package documentation.
type Phase int

// The phases, in runbook order.
const (
	// PhaseOld runs on the old backend alone, as before the migration, but
	// refuses to win once the old store carries the "migrated" marker.
	PhaseOld Phase = iota + 1
	// PhaseBoth wins only when holding the election on the old backend and
	// then on the new one; losing either ends the term.
	PhaseBoth
	// PhaseNew runs on the new backend alone; its first term writes the
	// persistent "migrated" marker on the old store.
	PhaseNew
	// PhaseDone runs on the new backend alone, before and after [Cleanup],
	// keeping the new epoch in its tokens. Given an old backend, it reads
	// the old store's holder once per election and refuses to campaign
	// while that is a candidate; it never writes the old store.
	PhaseDone
)

// String returns the phase's name as [ParsePhase] accepts it: "old",
// "both", "new" or "done".
func (p Phase) String() string {
	switch p {
	case PhaseOld:
		return "old"
	case PhaseBoth:
		return "both"
	case PhaseNew:
		return "new"
	case PhaseDone:
		return "done"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Step returns the number of the runbook step in which replicas are rolled
// to p: 1 for PhaseOld, 2 for PhaseBoth, 3 for PhaseNew, 4 for PhaseDone.
func (p Phase) Step() int { return int(p) }

// valid reports whether p is one of the four phases.
func (p Phase) valid() bool { return p >= PhaseOld && p <= PhaseDone }

// ParsePhase returns the phase named s ("old", "both", "new" or "done", in
// any case, as URL schemes are), or an error wrapping [backend.ErrInvalid].
func ParsePhase(s string) (Phase, error) {
	for p := PhaseOld; p <= PhaseDone; p++ {
		if strings.EqualFold(p.String(), s) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("migrate: %w: phase is %q; want one of old, both, new, done", backend.ErrInvalid, s)
}
