package etcd

import (
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Defaults applied by [New] to the zero fields of [Options].
const (
	// DefaultPrefix is the default of [Options.Prefix]: none, so that an
	// election's keys are laid out as etcd's own concurrency package and
	// etcdctl elect lay them out. It is already the empty namespace, so
	// etcd needs no NoPrefix option (unlike redlock, whose default is a
	// non-empty prefix).
	DefaultPrefix = ""
	// DefaultCleanupTimeout is the default of [Options.CleanupTimeout].
	DefaultCleanupTimeout = 2 * time.Second
	// DefaultRequestTimeout is the default of [Options.RequestTimeout].
	DefaultRequestTimeout = 3 * time.Second
)

// maxTTLSeconds is etcd's MaxLeaseTTL (server/lease/lessor.go): 9,000,000,000
// seconds.
const maxTTLSeconds = 9_000_000_000

// Options configure a [Backend]. A nil *Options means all defaults.
type Options struct {
	// Prefix is prepended to every election name to form its key
	// directory: the candidates of election E are the keys
	// Prefix + E + "/" + <lease ID in lowercase hex>. The default,
	// [DefaultPrefix] (""), lays keys out exactly as
	// concurrency.NewElection(session, E) and `etcdctl elect E` do, so
	// those clients share elections with this driver. Set it (for example
	// "/elector/") to keep elections apart from the rest of the keyspace;
	// peers must then use Prefix + E as their election name. With a
	// Prefix, the held elections of a Backend share one watch of their
	// keys (on the Prefix) instead of one each: set it when a process
	// holds many elections.
	Prefix string

	// DriftFactor is the fraction of a lease's TTL by which the etcd
	// leader's clock may run ahead of this process's monotonic clock
	// during one lease. A lease's local Deadline is the send time of its
	// last acknowledged keepalive plus the granted TTL less TTL ×
	// DriftFactor + [backend.DriftFloor] ([backend.LeaseDeadline]). The
	// default, 0, means [backend.DefaultDriftFactor] (1%); the allowed
	// range is (0, [backend.MaxDriftFactor]].
	DriftFactor float64

	// CleanupTimeout bounds the work done after the caller's context has
	// ended: deleting the key of a Campaign whose ctx ended while it waited,
	// and revoking the Backend's leases in Close. The default, 0, means
	// [DefaultCleanupTimeout] (2s); negative values are refused.
	CleanupTimeout time.Duration

	// RequestTimeout bounds each request of Campaign, Leader, Leaders, Watch and
	// Renew whose ctx would last longer. The etcd client waits for a
	// connection as long as its context allows, so without it a cluster
	// that cannot be reached (a refused connection, a name that does not
	// resolve, a certificate the client does not trust) would make
	// Campaign wait silently for as long as its ctx lasts. A request the
	// cluster does not answer in time returns a transient error naming the
	// client's last connection error instead. The wait of a Campaign
	// behind an older candidate is not bounded: only the requests it makes
	// meanwhile are. The default, 0, means [DefaultRequestTimeout] (3s);
	// negative values are refused.
	RequestTimeout time.Duration
}

// config is Options validated, with defaults applied.
type config struct {
	prefix  string
	drift   float64
	cleanup time.Duration
	request time.Duration
}

func (o *Options) config() (config, error) {
	s := config{prefix: DefaultPrefix, drift: backend.DefaultDriftFactor, cleanup: DefaultCleanupTimeout, request: DefaultRequestTimeout}
	if o == nil {
		return s, nil
	}
	s.prefix = o.Prefix
	drift, err := backend.ValidateDriftFactor(o.DriftFactor)
	if err != nil {
		return s, fmt.Errorf("etcd: %w", err)
	}
	s.drift = drift
	switch {
	case o.CleanupTimeout < 0:
		return s, fmt.Errorf("etcd: %w: Options.CleanupTimeout is %v; want >= 0 (0 means %v)", backend.ErrInvalid, o.CleanupTimeout, DefaultCleanupTimeout)
	case o.CleanupTimeout > 0:
		s.cleanup = o.CleanupTimeout
	}
	switch {
	case o.RequestTimeout < 0:
		return s, fmt.Errorf("etcd: %w: Options.RequestTimeout is %v; want >= 0 (0 means %v)", backend.ErrInvalid, o.RequestTimeout, DefaultRequestTimeout)
	case o.RequestTimeout > 0:
		s.request = o.RequestTimeout
	}
	return s, nil
}

// ttlSeconds converts a candidate TTL to whole etcd lease seconds, rounding
// up. etcd leases cannot be shorter than one second; the server may raise a
// granted TTL further (see [Backend.Campaign]).
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl < time.Second || ttl > maxTTLSeconds*time.Second {
		return 0, fmt.Errorf("%w: Candidate.TTL is %v; want 1s to %ds (etcd leases are whole seconds, rounded up)",
			backend.ErrInvalid, ttl, int64(maxTTLSeconds))
	}
	return int64((ttl + time.Second - 1) / time.Second), nil
}
