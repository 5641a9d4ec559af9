package elector

import (
	"errors"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/term"
)

var (
	// ErrLeaseLost is the reason a term ended because its lease is gone or
	// could no longer be proved valid: the backend reported it lost, or no
	// renewal succeeded before the lease's deadline minus
	// [Options.SafetyMargin]. The reason passed to [Options.OnRevoked] wraps
	// it together with the cause (for example [backend.ErrLost]).
	ErrLeaseLost = term.ErrLeaseLost

	// ErrResigned is the reason a term ended because [Elector.Resign] was
	// called.
	ErrResigned = errors.New("elector: resigned")

	// ErrPreempted is the reason a term ended because a live candidate of
	// a higher [Options.Priority] was campaigning and the term had lasted
	// [Options.MinTerm], or because the store asked the leader to hand over
	// at once (on Kubernetes, Coordinated Leader Election named another
	// preferred holder of the Lease; see [backend.Yielder]): the leader
	// yielded so that the other is elected next.
	ErrPreempted = errors.New("elector: preempted by a candidate of a higher priority")

	// ErrNoLeader is returned by [Elector.Leader] when the election has no
	// holder. It is [backend.ErrNoLeader], so errors.Is works with either.
	ErrNoLeader = backend.ErrNoLeader

	// ErrNotLeader is returned by [Elector.Resign] when this elector does not
	// lead.
	ErrNotLeader = errors.New("elector: not the leader")

	// ErrRunning is returned by [Elector.Run] when another call to Run on the
	// same Elector has not returned yet.
	ErrRunning = errors.New("elector: already running")
)
