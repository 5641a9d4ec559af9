package redlock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Defaults applied by [New] to the zero fields of [Options].
const (
	// DefaultPrefix is the default of [Options.Prefix]: the prefix of
	// every key and notification channel unless Options set another.
	DefaultPrefix = "elector:"
	// DefaultRequestTimeout is the default of [Options.RequestTimeout].
	DefaultRequestTimeout = 100 * time.Millisecond
	// MinTTL is the shortest Candidate.TTL a Backend accepts. A lease's
	// Deadline lies TTL − (TTL × DriftFactor + 2 ms) after its round was
	// sent, which a TTL of a few milliseconds would leave at or before the
	// send time; 10 ms leaves at least 3 ms at the largest DriftFactor.
	// There is no maximum: Redis accepts any PX a time.Duration can hold.
	MinTTL = 10 * time.Millisecond
)

// Options configures a [Backend]. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// Prefix is put in front of every key and of the notification channel
	// the Backend uses: the lock key of election E is Prefix+E. The
	// default, used when Prefix is "" and NoPrefix is false, is
	// [DefaultPrefix] ("elector:"), which keeps election keys apart from
	// application keys.
	//
	// When a node is a Redis Cluster, put a hash tag in the prefix (for
	// example "{elector}:") so that an election's lock and counter keys share
	// a slot, as the scripts require.
	Prefix string

	// NoPrefix makes the lock key exactly the election name, so that a
	// redsync or node-redlock lock of that name and this Backend exclude one
	// another. Prefix must then be "". The default is false.
	//
	// (A separate flag, rather than a pointer, keeps the zero Options useful
	// and makes the empty prefix something a reader sees spelled out.)
	NoPrefix bool

	// RequestTimeout bounds every request to one node: the SET of an acquire,
	// the DEL of a release, the reads of Leader. A node that does not answer
	// within it counts as failed for that round. A renewal's PEXPIRE waits
	// longer, until the lease's Deadline (and at least RequestTimeout): a
	// reply that comes late, before the Deadline, still renews the lease.
	// It must be well below the TTL: the Redis docs suggest 5-50 ms for a
	// 10 s TTL. The default is [DefaultRequestTimeout] (100 ms), which leaves
	// room for GC pauses and loaded hosts; since every round ends as soon as
	// its outcome is decided, a slow node costs this much only when the
	// round cannot be decided without it. The allowed range is 1 ms to 10 s.
	// It does not bound the making of the first connections: before its
	// first round, a Backend connects to the nodes and loads its scripts
	// there, waiting until a quorum of them is ready, at most 1 s (or
	// RequestTimeout if longer), once.
	//
	// It bounds socket reads and writes only if the client honours context
	// deadlines: go-redis does so only with ContextTimeoutEnabled, which [New]
	// therefore requires of every *redis.Client, *redis.ClusterClient and
	// *redis.Ring. For other UniversalClient implementations the Backend
	// still stops waiting after RequestTimeout, but the request may hold a
	// connection until the client's own ReadTimeout.
	RequestTimeout time.Duration

	// DriftFactor is the fraction of the TTL by which the Redis nodes'
	// clocks may run ahead of this process's during one lease; it means the
	// same in every elector driver. A lease's Deadline is the send time of
	// its last successful round plus TTL − (TTL × DriftFactor + 2 ms)
	// ([backend.LeaseDeadline]). The default, used when it is 0, is
	// [backend.DefaultDriftFactor] (0.01, the value of the Redis
	// documentation and redsync); the allowed range is (0, 0.5]
	// ([backend.ValidateDriftFactor]).
	DriftFactor float64

	// RestartDelay is how long a node that restarted is left out of every
	// quorum, counted from its start: a node restarted without persistence
	// has forgotten the locks it granted, which expire at most a TTL after
	// its crash (see # Safety in the package documentation). The Backend
	// learns each node's start from INFO server when it first uses the node
	// and after each reconnection. The default, used when it is 0, is the
	// longest Candidate.TTL this Backend has campaigned with; set it when
	// other processes campaign for the same elections with longer TTLs. The
	// allowed range is 0 to 1h.
	RestartDelay time.Duration

	// NoRestartDelay counts a node toward quorums as soon as it answers,
	// even right after a restart, and spares the INFO request per node and
	// reconnection. Set it only when every node keeps its data across a
	// crash (appendonly yes with appendfsync always) or when operators
	// delay restarts themselves. RestartDelay must then be 0. The default
	// is false.
	NoRestartDelay bool

	// Logger receives, at level Debug, each acquire round of a Campaign
	// that won no lease: why it was lost (another candidate holds the
	// election, rivals split the nodes, nodes in their restart delay kept a
	// quorum out of reach), how long it took, how many nodes answered yes,
	// no or failed, the holder's identity, and how long the candidate waits
	// before its next round (0 after its first lost round: it retries at
	// once, listening for releases from then on); and each round that
	// failed with the error Campaign returns for it. Nil discards them; the
	// driver logs nothing else.
	Logger *slog.Logger
}

// maxRestartDelay is the longest Options.RestartDelay: the longest TTL the
// portable layer accepts.
const maxRestartDelay = time.Hour

// config is Options with the defaults applied and checked.
type config struct {
	prefix         string
	requestTimeout time.Duration
	drift          float64
	// restartDelay is Options.RestartDelay (0: the longest TTL).
	restartDelay   time.Duration
	noRestartDelay bool
	logger         *slog.Logger // nil: discard
}

func (o *Options) config() (config, error) {
	c := config{prefix: DefaultPrefix, requestTimeout: DefaultRequestTimeout, drift: backend.DefaultDriftFactor}
	if o == nil {
		return c, nil
	}
	c.logger = o.Logger
	switch {
	case o.NoPrefix && o.Prefix != "":
		return c, fmt.Errorf("redlock: %w: Options.Prefix is %q but Options.NoPrefix is set; want one or the other", backend.ErrInvalid, o.Prefix)
	case o.NoPrefix:
		c.prefix = ""
	case o.Prefix != "":
		c.prefix = o.Prefix
	}
	if o.RequestTimeout != 0 {
		if o.RequestTimeout < time.Millisecond || o.RequestTimeout > 10*time.Second {
			return c, fmt.Errorf("redlock: %w: Options.RequestTimeout is %v; want 1ms to 10s (0 for the default %v)", backend.ErrInvalid, o.RequestTimeout, DefaultRequestTimeout)
		}
		c.requestTimeout = o.RequestTimeout
	}
	drift, err := backend.ValidateDriftFactor(o.DriftFactor)
	if err != nil {
		return c, fmt.Errorf("redlock: %w", err)
	}
	c.drift = drift
	switch {
	case o.RestartDelay < 0 || o.RestartDelay > maxRestartDelay:
		return c, fmt.Errorf("redlock: %w: Options.RestartDelay is %v; want 0 to %v (0 for the longest Candidate.TTL)", backend.ErrInvalid, o.RestartDelay, maxRestartDelay)
	case o.NoRestartDelay && o.RestartDelay != 0:
		return c, fmt.Errorf("redlock: %w: Options.RestartDelay is %v but Options.NoRestartDelay is set; want one or the other", backend.ErrInvalid, o.RestartDelay)
	}
	c.restartDelay, c.noRestartDelay = o.RestartDelay, o.NoRestartDelay
	return c, nil
}

// deadline returns the Deadline of a lease of ttl whose round was sent at
// start.
func (c config) deadline(start time.Time, ttl time.Duration) time.Time {
	return backend.LeaseDeadline(start, ttl, c.drift)
}

// checkTTL refuses a Candidate.TTL below [MinTTL].
func checkTTL(election string, ttl time.Duration) error {
	if ttl < MinTTL {
		return fmt.Errorf("redlock: campaign %q: %w: Candidate.TTL is %v; want %v or more (no upper bound)", election, backend.ErrInvalid, ttl, MinTTL)
	}
	return nil
}

// ttlMillis rounds ttl up to whole milliseconds, the precision of PX.
func ttlMillis(ttl time.Duration) time.Duration {
	return (ttl + time.Millisecond - 1).Truncate(time.Millisecond)
}
