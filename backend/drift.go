package backend

import (
	"fmt"
	"math"
	"time"
)

// DefaultDriftFactor is the clock-drift allowance every driver uses when its
// Options.DriftFactor is zero: 1% of the TTL (plus [DriftFloor]), the value
// antirez's Redlock description and redsync use.
const DefaultDriftFactor = 0.01

// DriftFloor is the fixed part of every driver's drift allowance: stores
// expire leases with millisecond resolution, so a lease may end up to a
// millisecond early at each end of its life.
const DriftFloor = 2 * time.Millisecond

// MaxDriftFactor is the largest DriftFactor a driver accepts.
const MaxDriftFactor = 0.5

// ValidateDriftFactor checks a driver's Options.DriftFactor and returns the
// factor to use: [DefaultDriftFactor] for 0, f itself when it lies in
// (0, [MaxDriftFactor]], and otherwise an error wrapping [ErrInvalid] that
// names the allowed range. Every driver's option of that name means the same:
// the fraction of the TTL by which the store's clock may run ahead of this
// process's during one lease.
func ValidateDriftFactor(f float64) (float64, error) {
	switch {
	case f == 0:
		return DefaultDriftFactor, nil
	case math.IsNaN(f) || f < 0 || f > MaxDriftFactor:
		return 0, fmt.Errorf("%w: Options.DriftFactor is %v; want a fraction in (0, %v] (0 for the default %v)",
			ErrInvalid, f, MaxDriftFactor, DefaultDriftFactor)
	}
	return f, nil
}

// LeaseDeadline returns the conservative local deadline of a lease of ttl
// whose acquiring or renewing request was sent at sent: sent + ttl − (ttl ×
// factor + [DriftFloor]). Every driver computes [Lease.Deadline] with it, so
// the same DriftFactor means the same margin on every backend. sent should
// carry a monotonic clock reading (time.Now).
func LeaseDeadline(sent time.Time, ttl time.Duration, factor float64) time.Time {
	return sent.Add(ttl - time.Duration(float64(ttl)*factor) - DriftFloor)
}
