package compare

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/partition"
)

// Options configure [Run]. A nil *Options, like every zero field, means the
// defaults, which are the full run; [Short] returns a run of a few seconds.
type Options struct {
	// TTL is the lease TTL of every workload. The default is 2s.
	TTL time.Duration
	// Trials is the number of trials of [Acquire] and [Handover] per
	// backend. The default is 200.
	Trials int
	// FailoverTrials is the number of trials of [Failover] per backend;
	// each takes about one TTL. The default is 10.
	FailoverTrials int
	// Concurrency is the number of goroutines (and of elections) of
	// [Throughput], and the number of concurrent requests while the [Renew]
	// workload campaigns and renews. The default is 16.
	Concurrency int
	// ThroughputTrials is the number of [Throughput] trials per backend, each
	// running for Duration. The defaults are 10 trials of 1s.
	ThroughputTrials int
	Duration         time.Duration
	// Held is the number of elections the [Renew] workload holds on one
	// client (fewer on a client that limits its request rate: see
	// [Result.Held]), and RenewRounds the number of times it renews them
	// all, one round every TTL/3. The defaults are 1,000 and 10.
	Held        int
	RenewRounds int
	// Partitions and Members size the partition group of [Join] and
	// [Leave], and RebalanceTrials is the number of join-and-leave trials
	// per backend. The defaults are 64 partitions over 3 members, 5 trials.
	Partitions      int
	Members         int
	RebalanceTrials int
	// FloorTTLs are the TTLs tried, in increasing order, to find the
	// shortest each backend grants (its TTL floor). The default is 100ms,
	// 250ms, 500ms, 1s, 2s, 3s, 5s, 10s and 30s.
	FloorTTLs []time.Duration
	// Prefix is the election-name prefix; it must start with PrefixRoot+"/".
	// The default is PrefixRoot/<12 random hex digits>, which no other run
	// shares. Set it only to know the prefix in advance (tests do).
	Prefix string
	// Progress, when not nil, is called after each trial, and as the
	// cleanup goes from one step to the next, from Run's goroutine.
	Progress func(Progress)
	// Abort, when not nil, cuts the cleanup short once it is closed (the
	// elect command closes it at a second Ctrl-C): Run stops releasing,
	// removing and checking, and returns at once, and each backend's
	// CleanupError says what may remain. The leases left lapse within the
	// TTL; what a Target's Cleanup had to remove stays.
	Abort <-chan struct{}
}

// Short returns the options of a quick run (a few seconds per backend with
// a 2s TTL): enough to check that everything works, too few samples for
// high percentiles.
func Short() *Options {
	return &Options{Trials: 10, FailoverTrials: 2, Concurrency: 4, ThroughputTrials: 3,
		Duration: 300 * time.Millisecond, Held: 20, RenewRounds: 3, Partitions: 16, Members: 2, RebalanceTrials: 2}
}

// Bounds of the options, refused beyond them with backend.ErrInvalid.
const (
	maxTrials   = 100_000
	maxHeld     = 100_000
	maxParallel = 1_000
	maxMembers  = 30
)

// withDefaults validates o and returns a copy with the defaults filled in.
func (o *Options) withDefaults() (*Options, error) {
	c := Options{}
	if o != nil {
		c = *o
		c.FloorTTLs = slices.Clone(o.FloorTTLs)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Trials, 200)
	def(&c.FailoverTrials, 10)
	def(&c.Concurrency, 16)
	def(&c.ThroughputTrials, 10)
	def(&c.Held, 1000)
	def(&c.RenewRounds, 10)
	def(&c.Partitions, 64)
	def(&c.Members, 3)
	def(&c.RebalanceTrials, 5)
	if c.TTL == 0 {
		c.TTL = 2 * time.Second
	}
	if c.Duration == 0 {
		c.Duration = time.Second
	}
	if c.FloorTTLs == nil {
		c.FloorTTLs = []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
			time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}
	}
	return &c, c.check()
}

func (o *Options) check() error {
	ints := []struct {
		name string
		v    int
		max  int
	}{{"Trials", o.Trials, maxTrials}, {"FailoverTrials", o.FailoverTrials, maxTrials}, {"Concurrency", o.Concurrency, maxParallel},
		{"ThroughputTrials", o.ThroughputTrials, maxTrials}, {"Held", o.Held, maxHeld}, {"RenewRounds", o.RenewRounds, maxTrials},
		{"Partitions", o.Partitions, partition.MaxPartitions}, {"Members", o.Members, maxMembers}, {"RebalanceTrials", o.RebalanceTrials, maxTrials}}
	for _, f := range ints {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("compare: Options.%s is %d; want 0 (default) or 1 to %d: %w", f.name, f.v, f.max, backend.ErrInvalid)
		}
	}
	switch {
	case o.TTL < backend.MinTTL || o.TTL > time.Hour:
		return fmt.Errorf("compare: Options.TTL is %v; want 0 (default 2s) or %v to 1h: %w", o.TTL, backend.MinTTL, backend.ErrInvalid)
	case o.Duration < 0 || o.Duration > time.Hour:
		return fmt.Errorf("compare: Options.Duration is %v; want 0 (default 1s) or up to 1h: %w", o.Duration, backend.ErrInvalid)
	case o.Prefix != "" && !strings.HasPrefix(o.Prefix, PrefixRoot+"/"):
		return fmt.Errorf("compare: Options.Prefix is %q; want %q followed by a name of its own: %w", o.Prefix, PrefixRoot+"/", backend.ErrInvalid)
	}
	if o.Prefix != "" {
		if err := backend.ValidateElection(o.Prefix + "/x"); err != nil {
			return fmt.Errorf("compare: Options.Prefix: %w", err)
		}
	}
	for i, t := range o.FloorTTLs {
		if t < backend.MinTTL || (i > 0 && t <= o.FloorTTLs[i-1]) {
			return fmt.Errorf("compare: Options.FloorTTLs[%d] is %v; want increasing TTLs of at least %v: %w", i, t, backend.MinTTL, backend.ErrInvalid)
		}
	}
	return nil
}

// MarshalJSON writes the options with durations in milliseconds.
func (o Options) MarshalJSON() ([]byte, error) {
	floors := make([]float64, len(o.FloorTTLs))
	for i, t := range o.FloorTTLs {
		floors[i] = ms(t)
	}
	return json.Marshal(struct {
		TTLMS            float64   `json:"ttl_ms"`
		Trials           int       `json:"trials"`
		FailoverTrials   int       `json:"failover_trials"`
		Concurrency      int       `json:"concurrency"`
		ThroughputTrials int       `json:"throughput_trials"`
		DurationMS       float64   `json:"duration_ms"`
		Held             int       `json:"held"`
		RenewRounds      int       `json:"renew_rounds"`
		FloorTTLsMS      []float64 `json:"floor_ttls_ms"`
		Partitions       int       `json:"partitions"`
		Members          int       `json:"members"`
		RebalanceTrials  int       `json:"rebalance_trials"`
	}{ms(o.TTL), o.Trials, o.FailoverTrials, o.Concurrency, o.ThroughputTrials, ms(o.Duration), o.Held, o.RenewRounds, floors,
		o.Partitions, o.Members, o.RebalanceTrials})
}
