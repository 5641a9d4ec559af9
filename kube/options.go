package kube

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/leaderkit/elector/backend"
)

// DefaultCleanupTimeout is the default of [Options.CleanupTimeout].
const DefaultCleanupTimeout = 2 * time.Second

// DefaultRequestTimeout is the default of [Options.RequestTimeout].
const DefaultRequestTimeout = 3 * time.Second

// Options configure a [Backend]. A nil *Options means all defaults.
type Options struct {
	// DriftFactor is the fraction of a lease's TTL by which the clock of a
	// waiting candidate (in any process: elector or client-go) may run
	// faster than this process's monotonic clock during one lease. A
	// lease's local Deadline is the send time of its last successful
	// update plus the TTL less TTL × DriftFactor + [backend.DriftFloor]
	// ([backend.LeaseDeadline]). The default, 0, means
	// [backend.DefaultDriftFactor] (1%); the allowed range is
	// (0, [backend.MaxDriftFactor]].
	DriftFactor float64

	// CleanupTimeout bounds the work done after the caller's context has
	// ended: clearing a Lease that a Campaign may have taken when its ctx
	// ended during the request, retrying a Release that failed, and
	// releasing the held Leases in Close. The default, 0, means
	// [DefaultCleanupTimeout] (2s); negative values are refused.
	CleanupTimeout time.Duration

	// RequestTimeout bounds each request to the apiserver whose ctx would
	// last longer, so that an apiserver that does not answer makes
	// Campaign, Leader, Renew and Release return a transient error instead
	// of waiting in silence. The wait of a Campaign behind a holder and the
	// watches of Campaign and Watch are not bounded by it. The default, 0,
	// means [DefaultRequestTimeout] (3s); negative values are refused.
	RequestTimeout time.Duration

	// ElectorOnly declares that only elector candidates campaign on the
	// Backend's Leases: no client-go LeaderElector, nor any other client
	// that notices a change of a Lease only when a whole-second field of
	// it changes. A lease's Deadline then counts from every renewal, and
	// TTLs from one second are accepted. By default (false) the Deadline
	// counts from the first renewal in each second of renewTime, which is
	// what client-go's candidates can see, and a TTL below [MinTTL] is
	// refused. See section Timing of docs/design/kube.md.
	ElectorOnly bool
}

// config is Options validated, with defaults applied.
type config struct {
	drift       float64
	cleanup     time.Duration
	request     time.Duration
	electorOnly bool
}

func (o *Options) config() (config, error) {
	s := config{drift: backend.DefaultDriftFactor, cleanup: DefaultCleanupTimeout, request: DefaultRequestTimeout}
	if o == nil {
		return s, nil
	}
	drift, err := backend.ValidateDriftFactor(o.DriftFactor)
	if err != nil {
		return s, fmt.Errorf("kube: %w", err)
	}
	s.drift = drift
	s.electorOnly = o.ElectorOnly
	switch {
	case o.CleanupTimeout < 0:
		return s, fmt.Errorf("kube: %w: Options.CleanupTimeout is %v; want >= 0 (0 means %v)", backend.ErrInvalid, o.CleanupTimeout, DefaultCleanupTimeout)
	case o.CleanupTimeout > 0:
		s.cleanup = o.CleanupTimeout
	}
	switch {
	case o.RequestTimeout < 0:
		return s, fmt.Errorf("kube: %w: Options.RequestTimeout is %v; want >= 0 (0 means %v)", backend.ErrInvalid, o.RequestTimeout, DefaultRequestTimeout)
	case o.RequestTimeout > 0:
		s.request = o.RequestTimeout
	}
	return s, nil
}

// ttlSeconds converts a candidate TTL to the Lease's leaseDurationSeconds,
// rounding up: a Lease's duration is whole seconds, at least one, and at
// least [MinTTL] unless the Leases are for elector candidates only.
func (s config) ttlSeconds(ttl time.Duration) (int32, error) {
	if !s.electorOnly && ttl < MinTTL && ttl > 0 {
		return 0, fmt.Errorf("%w: Candidate.TTL is %v; want at least %v on a Lease that client-go candidates may share (they notice a renewal only when renewTime moves to another whole second), or set Options.ElectorOnly for TTLs from 1s",
			backend.ErrInvalid, ttl, MinTTL)
	}
	if ttl < time.Second || ttl > math.MaxInt32*time.Second {
		return 0, fmt.Errorf("%w: Candidate.TTL is %v; want 1s to %ds (a Lease's leaseDurationSeconds is whole seconds, rounded up)",
			backend.ErrInvalid, ttl, int64(math.MaxInt32))
	}
	return int32((ttl + time.Second - 1) / time.Second), nil
}

// MinTTL is the shortest [backend.Candidate.TTL] the driver accepts unless
// [Options.ElectorOnly] is set. client-go's candidates notice a change of
// the Lease only when its renewTime moves to another whole second, so a
// holder's Deadline counts from the first renewal of each second (see
// section Timing of docs/design/kube.md); a lease must outlive a second plus a
// renewal interval and a safety margin to be kept by regular renewals.
const MinTTL = 3 * time.Second

var _ backend.TTLFloor = (*Backend)(nil)

// MinTTL returns the shortest [backend.Candidate.TTL] a Campaign of the
// Backend accepts ([MinTTL], or 1 s with [Options.ElectorOnly]) and why
// (it implements [backend.TTLFloor], so that tools such as elect compare
// pick a TTL the Backend accepts). It asks nothing of the apiserver.
func (b *Backend) MinTTL(context.Context) (time.Duration, string, error) {
	if b.cfg.electorOnly {
		return time.Second, "leaseDurationSeconds is whole seconds", nil
	}
	return MinTTL, "client-go candidates may share the Leases (elector_only is not set)", nil
}
