package compare

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// identity is the candidate identity of every campaign of a run.
const identity = "elect-compare"

// runner is the state of one Run.
type runner struct {
	o   *Options
	rep *Report
	bs  []*bstate
	pr  *tracker

	// stop is the context of what must run also after the run's ctx
	// ended (releases, the cleanup): it ends only when Options.Abort is
	// closed.
	stop context.Context

	bg sync.WaitGroup // closes of crashed clients
}

// bstate is the state of one backend during a run.
type bstate struct {
	t    Target
	rep  *BackendReport
	a, b *Client // the holder's and the waiter's clients

	mu     sync.Mutex
	held   map[backend.Lease]*Client // leases not released yet, with their client
	extra  []*Client                 // other clients to close
	renew  []backend.Lease           // the leases of the Renew workload …
	rc     *Client                   // … the client holding them …
	req0   int64                     // … its request count when the rounds began …
	round0 time.Time                 // … and when they began
	keep   *keeper                   // renews the leases until then
	group  *group                    // the partition group of Join and Leave
	ops    int                       // Throughput and Renew: operations …
	opTime time.Duration             // … and the time they took
	cutOff map[string]time.Time      // elections a cut-off holder holds, with when its lease lapses

	// elections holds every election campaigned for on this backend, the
	// only ones its cleanup removes and checks: a workload may name more
	// than a backend runs (the Renew workload holds fewer elections on a
	// rate-limited client).
	elections map[string]bool

	cleaned     bool // the target's Cleanup succeeded
	unreachable bool // the first campaign failed: nothing to clean up or check
}

func (b *bstate) result(workload string) *Result { return b.rep.Result(workload) }

// name returns the election prefix/suffix.
func (r *runner) name(suffix string) string { return r.o.Prefix + "/" + suffix }

// record records elections as campaigned for on b, for the cleanup.
func (b *bstate) record(elections ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.elections == nil {
		b.elections = map[string]bool{}
	}
	for _, e := range elections {
		b.elections[e] = true
	}
}

// names returns every election campaigned for on b, sorted.
func (b *bstate) names() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.elections))
	for n := range b.elections {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// open opens two clients of every target and warms them up.
func (r *runner) open(ctx context.Context, targets []Target) error {
	for _, t := range targets {
		br := &BackendReport{Name: t.Name, TokenSource: t.TokenSource, Safety: t.Safety}
		for _, w := range Workloads {
			br.Results = append(br.Results, &Result{Workload: w})
		}
		r.rep.Backends = append(r.rep.Backends, br)
		b := &bstate{t: t, rep: br, held: map[backend.Lease]*Client{}}
		r.bs = append(r.bs, b)
		var err error
		if b.a, err = t.Open(ctx); err != nil {
			return fmt.Errorf("compare: open %s: %w", t.Name, err)
		}
		if b.b, err = t.Open(ctx); err != nil {
			return fmt.Errorf("compare: open %s: %w", t.Name, err)
		}
	}
	// A first campaign on each client makes its connections (and, on
	// ZooKeeper, its session of this TTL), which no workload should pay for,
	// and finds a backend that does not answer before any workload waits
	// for it.
	for _, b := range r.bs {
		for _, c := range []*Client{b.a, b.b} {
			wctx, cancel := context.WithTimeout(ctx, reachTimeout)
			began := time.Now()
			l, err := r.campaign(wctx, b, c, r.name("warm-up"))
			timedOut := wctx.Err() != nil
			cancel()
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, backend.ErrInvalid):
				b.unreachable = true
				return fmt.Errorf("compare: %s refused a first campaign: %w", b.t.label(), err)
			case err != nil && timedOut:
				b.unreachable = true
				return fmt.Errorf("compare: %s does not answer: a first campaign did not succeed within %v: %w", b.t.label(), reachTimeout, err)
			case err != nil:
				b.unreachable = true
				return fmt.Errorf("compare: %s does not answer: a first campaign failed after %v: %w", b.t.label(), time.Since(began).Round(10*time.Millisecond), err)
			}
			_ = r.release(ctx, b, l)
		}
	}
	return nil
}

// reachTimeout bounds the first campaign on each client, which finds a
// backend that does not answer.
const reachTimeout = 10 * time.Second

// label names t in messages: its name, and its address when known.
func (t *Target) label() string {
	if t.Address == "" {
		return t.Name
	}
	return t.Name + " (" + t.Address + ")"
}

// opTimeout bounds one operation that should not wait for anybody.
func (r *runner) opTimeout() time.Duration { return 2*r.o.TTL + 10*time.Second }

// campaign campaigns on c for election with the run's TTL, bounded by
// opTimeout, and records the lease for the cleanup.
func (r *runner) campaign(ctx context.Context, b *bstate, c *Client, election string) (backend.Lease, error) {
	return r.campaignTTL(ctx, b, c, election, r.o.TTL)
}

func (r *runner) campaignTTL(ctx context.Context, b *bstate, c *Client, election string, ttl time.Duration) (backend.Lease, error) {
	b.record(election) // before: a campaign that fails may leave a record
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout())
	defer cancel()
	l, err := c.Backend.Campaign(ctx, backend.Candidate{Election: election, Identity: identity, TTL: ttl})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.held[l] = c
	b.mu.Unlock()
	return l, nil
}

// release releases l, bounded by opTimeout; a lease found gone counts as
// released. It does not end with ctx: a Release whose ctx has ended gives
// the lease up without removing it from the store (backend.Lease), which
// would leave the election held until the lease lapses. Only Options.Abort
// cuts it short.
func (r *runner) release(_ context.Context, b *bstate, l backend.Lease) error {
	return r.releaseWithin(r.stop, b, l)
}

// releaseWithin releases l, bounded by ctx and opTimeout, trying again
// after a transient error (a store that did not answer in time, a client
// whose rate limiter would have waited past the bound): a lease whose
// release failed stays held at the store until it lapses.
func (r *runner) releaseWithin(ctx context.Context, b *bstate, l backend.Lease) error {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout())
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := l.Release(ctx)
		if err == nil || errors.Is(err, backend.ErrLost) {
			b.forget(l)
			return err
		}
		if backend.IsPermanent(err) || ctx.Err() != nil {
			return err
		}
		sleep(ctx, retryPause(attempt))
		if ctx.Err() != nil {
			return err
		}
	}
}

// retryPause is the pause before the next attempt of a cleanup request
// that failed transiently: 100ms, growing to a second.
func retryPause(attempt int) time.Duration {
	return min(time.Duration(attempt)*100*time.Millisecond, time.Second)
}

// forget drops l from the leases the cleanup releases.
func (b *bstate) forget(l backend.Lease) {
	b.mu.Lock()
	delete(b.held, l)
	b.mu.Unlock()
}

// addClient records a client for the cleanup to close.
func (b *bstate) addClient(c *Client) {
	b.mu.Lock()
	b.extra = append(b.extra, c)
	b.mu.Unlock()
}

// closeClient closes c now and forgets it.
func (b *bstate) closeClient(c *Client) {
	_ = c.Closer.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, e := range b.extra {
		if e == c {
			b.extra = append(b.extra[:i], b.extra[i+1:]...)
			break
		}
	}
}

// phase is one workload (or the TTL floor) as a number of trials per
// backend; trial i of every backend runs before trial i+1 of any.
type phase struct {
	name   string
	trials int
	est    time.Duration // a guess at one trial's time, before any ran
	pace   time.Duration // rounds of trials start at least this far apart
	setup  func(ctx context.Context, b *bstate)
	trial  func(ctx context.Context, b *bstate, i int)
	finish func(ctx context.Context, b *bstate)
}

// measure runs every phase, trial by trial, backends interleaved.
func (r *runner) measure(ctx context.Context) error {
	phases := r.phases()
	r.pr = newTracker(r.o.Progress, phases, len(r.bs))
	for _, ph := range phases {
		r.runPhase(ctx, ph)
		if ctx.Err() != nil {
			break
		}
	}
	for _, b := range r.bs {
		for _, res := range b.rep.Results {
			res.finish()
		}
	}
	return ctx.Err()
}

func (r *runner) runPhase(ctx context.Context, ph phase) {
	each := func(f func(context.Context, *bstate)) {
		for _, b := range r.bs {
			if ctx.Err() == nil && f != nil {
				f(ctx, b)
			}
		}
	}
	each(ph.setup)
	for i := 0; i < ph.trials && ctx.Err() == nil; i++ {
		start := time.Now()
		for k := range r.bs {
			b := r.bs[(i+k)%len(r.bs)] // a different backend first in each round
			t0 := time.Now()
			ph.trial(ctx, b, i)
			r.pr.trialDone(ph.name, b.t.Name, time.Since(t0))
			if ctx.Err() != nil {
				break
			}
		}
		if ph.pace > 0 && i+1 < ph.trials {
			sleep(ctx, time.Until(start.Add(ph.pace)))
		}
	}
	// finish runs even when ctx ended: it releases what setup took.
	for _, b := range r.bs {
		if ph.finish != nil {
			ph.finish(ctx, b)
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// failed records err on res unless ctx ended (an interrupted operation is
// not a failure of the backend).
func failed(ctx context.Context, res *Result, err error) {
	if ctx.Err() == nil {
		res.fail(err)
	}
}
