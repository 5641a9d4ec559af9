package compare

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/leaderkit/elector/backend"
)

// PrefixRoot is the first segment of every election [Run] creates.
const PrefixRoot = "elect-compare"

// Client is one client of a backend: its own connections to the store, as
// one process would have.
type Client struct {
	// Backend is the client's backend.
	Backend backend.Backend
	// Closer closes Backend and everything opened with it.
	Closer io.Closer
	// Crash, when not nil, cuts the client off from the store at once, as
	// the crash of its process would (kill -9 or a pulled cable): no request
	// reaches the store any more, nothing is released, the store learns of
	// it only when the leases' TTLs run out. Closer still has to be called.
	Crash func()
	// Requests, when not nil, returns the number of requests the client
	// has sent to the store so far (keep-alives and pings included), as
	// the client's side sees them: no access to the servers' statistics
	// is needed. The [Renew] workload reports it per held election.
	Requests func() int64
}

// Target is one backend to compare.
type Target struct {
	// Name labels the backend's column ("redis", "etcd", "zk").
	Name string
	// Open opens a new client of the backend; each call must return a
	// distinct client (its own connections or session). Required.
	Open func(ctx context.Context) (*Client, error)
	// OpenCrashable opens a client whose Crash is set; the [Failover]
	// workload needs it and is skipped when OpenCrashable is nil.
	OpenCrashable func(ctx context.Context) (*Client, error)
	// OpenCounted, when not nil, opens a client whose Requests is set: the
	// [Renew] workload then holds its elections on such a client and counts
	// the requests renewing them costs. When nil, Renew runs on a client of
	// Open, whose requests are counted only if its backend counts its own
	// (its driver's own Requests, as the kube driver's).
	OpenCounted func(ctx context.Context) (*Client, error)
	// Cleanup, when not nil, removes what the store keeps of the elections
	// named once their leases were released and every client of the run
	// closed: Redlock's fencing counters and migrated markers, which never
	// expire, and leases that could not be released (those of cut-off
	// holders). It must touch nothing else.
	Cleanup func(ctx context.Context, elections []string) error
	// TokenSource says where the backend's fencing tokens come from, in a
	// few words; Safety states its safety assumptions in one line.
	TokenSource, Safety string
	// Address, when not empty, names the backend's servers in errors, for
	// example "127.0.0.1:2379,127.0.0.1:2380"; it must not hold credentials.
	Address string
}

// BackendReport is what [Run] measured on one backend.
type BackendReport struct {
	// Name is the Target's Name; TokenSource and Safety are copied from it.
	Name, TokenSource, Safety string
	// TTLFloor is the smallest of [Options.FloorTTLs] the backend granted, 0
	// when it granted none; FloorError says why when a TTL failed for a
	// reason other than being out of range.
	TTLFloor   time.Duration
	FloorError string
	// RequestRate is the rate limit, in requests per second, of the client
	// that held the [Renew] workload's elections, when that client sets one
	// (its driver's own RequestRate, such as a Kubernetes client's QPS); 0 otherwise.
	RequestRate float64
	// Results holds one Result per workload, in the order of [Workloads].
	Results []*Result
	// Leftover lists elections that still had a leader after the cleanup
	// (there should be none), and CleanupError what went wrong cleaning up.
	Leftover     []string
	CleanupError string
}

// Result returns the result of workload, or nil.
func (b *BackendReport) Result(workload string) *Result {
	for _, r := range b.Results {
		if r.Workload == workload {
			return r
		}
	}
	return nil
}

// Report is the outcome of [Run].
type Report struct {
	// Prefix is the election-name prefix the run used and cleaned up.
	Prefix string
	// Options are the options the run used, defaults filled in.
	Options Options
	// Started is when the run began; Elapsed how long it took.
	Started time.Time
	Elapsed time.Duration
	// Backends holds one report per Target, in the order given.
	Backends []*BackendReport
	// Interrupted is true when ctx ended before every workload ran; the
	// results then hold what was measured so far.
	Interrupted bool
}

// Run measures every workload of [Workloads] on every target, interleaving
// the targets trial by trial so that the load of the machine falls on all
// of them alike, and returns the report.
//
// Every election Run creates is named under a prefix of its own,
// PrefixRoot/<random>/, and Run removes everything it created before it
// returns, also when ctx ends: it then lets the trial under way stop,
// releases what it holds (a release is never cut short by ctx, since a
// lease released with an ended context stays held at the store until it
// lapses), closes its clients, runs the targets' Cleanup, checks, and
// returns the partial report with Interrupted set and ctx.Err(). The
// cleanup takes at most [CleanupBound] whatever the TTL ([Options.Abort]
// cuts it shorter); each backend's Leftover and CleanupError say what it
// could not remove. It needs no permission beyond what a candidate in those
// elections needs.
//
// Run returns an error without measuring anything when the options or the
// targets are invalid, a target cannot be opened, or a first campaign on a
// target does not succeed within ten seconds (the backend does not answer):
// an error that names the target's Address.
func Run(ctx context.Context, targets []Target, opts *Options) (*Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkTargets(targets); err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = NewPrefix()
	}
	rep := &Report{Prefix: o.Prefix, Options: *o, Started: time.Now()}
	stop, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	if o.Abort != nil {
		go func() {
			select {
			case <-o.Abort:
				cancel()
			case <-stop.Done():
			}
		}()
	}
	r := &runner{o: o, rep: rep, stop: stop}
	defer func() { rep.Elapsed = time.Since(rep.Started) }()
	if err := r.open(ctx, targets); err != nil {
		r.cleanup()
		return nil, err
	}
	err = r.measure(ctx)
	r.cleanup()
	if ctx.Err() != nil {
		rep.Interrupted = true
		return rep, ctx.Err()
	}
	return rep, err
}

func checkTargets(targets []Target) error {
	if len(targets) == 0 {
		return fmt.Errorf("compare: no targets; want at least one: %w", backend.ErrInvalid)
	}
	seen := map[string]bool{}
	for i, t := range targets {
		switch {
		case t.Name == "":
			return fmt.Errorf("compare: Target[%d].Name is empty: %w", i, backend.ErrInvalid)
		case seen[t.Name]:
			return fmt.Errorf("compare: Target[%d].Name %q is used twice; want distinct names: %w", i, t.Name, backend.ErrInvalid)
		case t.Open == nil:
			return fmt.Errorf("compare: Target[%d].Open (%s) is nil: %w", i, t.Name, backend.ErrInvalid)
		}
		seen[t.Name] = true
	}
	return nil
}

// NewPrefix returns a new election prefix, PrefixRoot/<12 random hex
// digits>, which no other run shares: the default of [Options.Prefix].
func NewPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return PrefixRoot + "/" + hex.EncodeToString(b)
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MarshalJSON writes the report with durations in milliseconds.
func (r *Report) MarshalJSON() ([]byte, error) {
	type backendJSON struct {
		Name         string    `json:"name"`
		TokenSource  string    `json:"token_source"`
		Safety       string    `json:"safety"`
		TTLFloorMS   float64   `json:"ttl_floor_ms"`
		FloorError   string    `json:"floor_error,omitempty"`
		RequestRate  float64   `json:"request_rate,omitempty"`
		Results      []*Result `json:"results"`
		Leftover     []string  `json:"leftover"`
		CleanupError string    `json:"cleanup_error,omitempty"`
	}
	j := struct {
		Prefix      string        `json:"prefix"`
		Started     time.Time     `json:"started"`
		ElapsedMS   float64       `json:"elapsed_ms"`
		TTLMS       float64       `json:"ttl_ms"`
		Options     Options       `json:"options"`
		Interrupted bool          `json:"interrupted"`
		Backends    []backendJSON `json:"backends"`
	}{Prefix: r.Prefix, Started: r.Started, ElapsedMS: ms(r.Elapsed), TTLMS: ms(r.Options.TTL), Options: r.Options, Interrupted: r.Interrupted}
	for _, b := range r.Backends {
		j.Backends = append(j.Backends, backendJSON{Name: b.Name, TokenSource: b.TokenSource, Safety: b.Safety,
			TTLFloorMS: ms(b.TTLFloor), FloorError: b.FloorError, RequestRate: b.RequestRate, Results: b.Results, Leftover: append([]string{}, b.Leftover...), CleanupError: b.CleanupError})
	}
	return json.Marshal(j)
}

// Failed reports whether any workload of any backend failed, or the cleanup
// left something behind ([Report.Left]).
func (r *Report) Failed() error {
	var errs []error
	for _, b := range r.Backends {
		for _, res := range b.Results {
			if res.Errors > 0 {
				errs = append(errs, fmt.Errorf("%s %s: %d errors, first: %s", b.Name, res.Workload, res.Errors, res.FirstError))
			}
		}
	}
	return errors.Join(append(errs, r.Left())...)
}

// Left reports what the cleanup left behind or could not check, per
// backend, or nil when it removed everything the run created.
func (r *Report) Left() error {
	var errs []error
	for _, b := range r.Backends {
		if len(b.Leftover) > 0 {
			errs = append(errs, fmt.Errorf("%s: elections still led after the cleanup (their leases lapse within the TTL, %v): %q", b.Name, r.Options.TTL, b.Leftover))
		}
		if b.CleanupError != "" {
			errs = append(errs, fmt.Errorf("%s: cleanup: %s", b.Name, b.CleanupError))
		}
	}
	return errors.Join(errs...)
}
