package etcd

import (
	"fmt"
	"math"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Defaults of [Options].
const (
	// DefaultClockDrift is the default of [Options.ClockDrift]: 1%.
	DefaultClockDrift = 0.01
	// DefaultCleanupTimeout is the default of [Options.CleanupTimeout].
	DefaultCleanupTimeout = 2 * time.Second
)

// maxTTLSeconds is etcd's MaxLeaseTTL (server/lease/lessor.go): 9,000,000,000
// seconds.
const maxTTLSeconds = 9_000_000_000

// Options configure a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix is prepended to every election name to form its key
	// directory: the candidates of election E are the keys
	// Prefix + E + "/" + <lease ID in lowercase hex>. The default, "",
	// lays keys out exactly as concurrency.NewElection(session, E) and
	// `etcdctl elect E` do, so those clients share elections with this
	// driver. Set it (for example "/elector/") to keep elections apart
	// from the rest of the keyspace; peers must then use Prefix + E as
	// their election name.
	Prefix string

	// ClockDrift bounds how much faster the etcd leader's clock may run
	// than this process's monotonic clock, as a fraction of a lease TTL.
	// A lease's local Deadline is the send time of its last acknowledged
	// keepalive plus TTL × (1 − ClockDrift). The default, 0, means
	// [DefaultClockDrift] (1%); the allowed range is [0, 0.5).
	ClockDrift float64

	// CleanupTimeout bounds the work done after the caller's context has
	// ended: deleting the key of a Campaign whose ctx ended while it waited,
	// and revoking the Backend's leases in Close. The default, 0, means
	// [DefaultCleanupTimeout] (2s); negative values are refused.
	CleanupTimeout time.Duration
}

// settings are validated Options with defaults filled in.
type settings struct {
	prefix  string
	drift   float64
	cleanup time.Duration
}

func (o *Options) settings() (settings, error) {
	s := settings{drift: DefaultClockDrift, cleanup: DefaultCleanupTimeout}
	if o == nil {
		return s, nil
	}
	s.prefix = o.Prefix
	switch {
	case math.IsNaN(o.ClockDrift) || o.ClockDrift < 0 || o.ClockDrift >= 0.5:
		return s, fmt.Errorf("etcd: %w: Options.ClockDrift is %v; want a fraction in [0, 0.5)", backend.ErrInvalid, o.ClockDrift)
	case o.ClockDrift > 0:
		s.drift = o.ClockDrift
	}
	switch {
	case o.CleanupTimeout < 0:
		return s, fmt.Errorf("etcd: %w: Options.CleanupTimeout is %v; want >= 0 (0 means %v)", backend.ErrInvalid, o.CleanupTimeout, DefaultCleanupTimeout)
	case o.CleanupTimeout > 0:
		s.cleanup = o.CleanupTimeout
	}
	return s, nil
}

// ttlSeconds converts a candidate TTL to whole etcd lease seconds, rounding
// up. etcd leases cannot be shorter than one second (and the server raises a
// granted TTL to its own minimum, ceil(1.5 × election timeout), which the
// Deadline then reflects).
func ttlSeconds(ttl time.Duration) (int64, error) {
	switch {
	case ttl < time.Second:
		return 0, fmt.Errorf("%w: ttl %v is below etcd's minimum lease TTL of 1s", backend.ErrInvalid, ttl)
	case ttl > maxTTLSeconds*time.Second:
		return 0, fmt.Errorf("%w: ttl %v is above etcd's maximum lease TTL of %ds", backend.ErrInvalid, ttl, int64(maxTTLSeconds))
	}
	return int64((ttl + time.Second - 1) / time.Second), nil
}
