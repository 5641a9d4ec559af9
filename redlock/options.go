package redlock

import (
	"fmt"
	"time"
)

// Defaults applied by [New] to the zero fields of [Options].
const (
	// DefaultKeyPrefix is the prefix of every key and the default of
	// [Options.KeyPrefix].
	DefaultKeyPrefix = "elector:"
	// DefaultNodeTimeout is the default of [Options.NodeTimeout].
	DefaultNodeTimeout = 100 * time.Millisecond
	// DefaultDriftFactor is the default of [Options.DriftFactor].
	DefaultDriftFactor = 0.01
	// MinTTL is the shortest Candidate.TTL a Backend accepts.
	MinTTL = 10 * time.Millisecond
)

// driftFloor is the fixed part of the drift allowance: Redis expires keys
// with a 1 ms precision, so redlock-rb and node-redlock add 2 ms to
// TTL × DriftFactor (redlock-anchors.md § E.2).
const driftFloor = 2 * time.Millisecond

// Options configures a [Backend]. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// KeyPrefix is put in front of every key and of the notification channel
	// the Backend uses: the lock key of election E is KeyPrefix+E. The
	// default, used when KeyPrefix is "" and NoKeyPrefix is false, is
	// [DefaultKeyPrefix] ("elector:"), which keeps election keys apart from
	// application keys.
	//
	// When a node is a Redis Cluster, put a hash tag in the prefix (for
	// example "{elector}:") so that an election's lock and counter keys share
	// a slot, as the scripts require.
	KeyPrefix string

	// NoKeyPrefix makes the lock key exactly the election name, so that a
	// redsync or node-redlock lock of that name and this Backend exclude one
	// another. KeyPrefix must then be "". The default is false.
	//
	// (A separate flag, rather than a pointer, keeps the zero Options useful
	// and makes the empty prefix something a reader sees spelled out.)
	NoKeyPrefix bool

	// NodeTimeout bounds every request to one node: the SET of an acquire,
	// the PEXPIRE of a renewal, the DEL of a release, the reads of Leader. A
	// node that does not answer within it counts as failed for that round.
	// It must be well below the TTL: the Redis docs suggest 5-50 ms for a
	// 10 s TTL. The default is [DefaultNodeTimeout] (100 ms), which leaves
	// room for GC pauses and loaded hosts; since every round ends as soon as
	// its outcome is decided, a slow node costs this much only when the
	// round cannot be decided without it. The allowed range is 1 ms to 10 s.
	//
	// It bounds socket reads and writes only if the client honours context
	// deadlines: go-redis does so only with ContextTimeoutEnabled, which [New]
	// therefore requires of every *redis.Client, *redis.ClusterClient and
	// *redis.Ring. For other UniversalClient implementations the Backend
	// still stops waiting after NodeTimeout, but the request may hold a
	// connection until the client's own ReadTimeout.
	NodeTimeout time.Duration

	// DriftFactor is the fraction of the TTL allowed for the drift between
	// the clocks of this process and of the Redis nodes. A lease's validity
	// is TTL - elapsed - (TTL × DriftFactor + 2 ms). The default is
	// [DefaultDriftFactor] (0.01); the allowed range is (0, 0.5].
	DriftFactor float64
}

// config is Options with the defaults applied and checked.
type config struct {
	prefix      string
	nodeTimeout time.Duration
	drift       float64
}

func (o *Options) config() (config, error) {
	c := config{prefix: DefaultKeyPrefix, nodeTimeout: DefaultNodeTimeout, drift: DefaultDriftFactor}
	if o == nil {
		return c, nil
	}
	switch {
	case o.NoKeyPrefix && o.KeyPrefix != "":
		return c, fmt.Errorf("redlock: KeyPrefix is %q but NoKeyPrefix is set; want one or the other", o.KeyPrefix)
	case o.NoKeyPrefix:
		c.prefix = ""
	case o.KeyPrefix != "":
		c.prefix = o.KeyPrefix
	}
	if o.NodeTimeout != 0 {
		if o.NodeTimeout < time.Millisecond || o.NodeTimeout > 10*time.Second {
			return c, fmt.Errorf("redlock: NodeTimeout is %v; want 1ms to 10s (0 for the default %v)", o.NodeTimeout, DefaultNodeTimeout)
		}
		c.nodeTimeout = o.NodeTimeout
	}
	if o.DriftFactor != 0 {
		if !(o.DriftFactor > 0 && o.DriftFactor <= 0.5) {
			return c, fmt.Errorf("redlock: DriftFactor is %v; want a value in (0, 0.5] (0 for the default %v)", o.DriftFactor, DefaultDriftFactor)
		}
		c.drift = o.DriftFactor
	}
	return c, nil
}

// driftFor returns the drift allowance for a TTL: TTL × factor + 2 ms.
func (c config) driftFor(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*c.drift) + driftFloor
}
