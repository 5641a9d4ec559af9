package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Run runs the conformance suite against the driver behind newHarness, one
// named subtest per rule, each with a fresh Harness and a watchdog: every
// call the suite makes carries a context that ends 60 s + 30 TTL after the
// subtest starts. Most rules wait out TTLs, so the subtests run at once, as
// many as -test.parallel allows but no more than GOMAXPROCS (rules bound
// hand-overs and renewals at fractions of a TTL, which more rules than
// CPUs turn into a measure of the machine), each on its own Harness;
// newHarness is never called concurrently. Run returns when every subtest
// has ended.
func Run(t *testing.T, newHarness HarnessMaker) {
	tests := []rule{
		{"CampaignFree", testCampaignFree},
		{"TTL", testTTL},
		{"InvalidNames", testInvalidNames},
		{"SecondCandidateWaits", testSecondCandidateWaits},
		{"SameBackendCandidates", testSameBackendCandidates},
		{"ReleaseHandsOver", testReleaseHandsOver},
		{"FailedReleaseGivesUp", testFailedReleaseGivesUp},
		{"RenewKeepsLease", testRenewKeepsLease},
		{"ExpiryTakeover", testExpiryTakeover},
		{"StaleLease", testStaleLease},
		{"LeaderReports", testLeaderReports},
		{"CanceledCampaign", testCanceledCampaign},
		{"IndependentNames", testIndependentNames},
		{"Close", testClose},
		{"Isolated", testIsolated},
		{"Watch", testWatch},
		{"MutualExclusion", testMutualExclusion},
		{"Registry", testRegistry},
		{"RegistryWatch", testRegistryWatch},
		{"RegistryLiveness", testRegistryLiveness},
	}
	// t.Run from goroutines rather than t.Parallel: Run stays synchronous
	// for its caller, and the subtests keep their names.
	slots := make(chan struct{}, parallelism())
	var makeMu sync.Mutex // a HarnessMaker need not be safe for concurrent use
	var wg sync.WaitGroup
	for _, tc := range tests {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			t.Run(tc.name, func(t *testing.T) { runOne(t, tc, newHarness, &makeMu) })
		})
	}
	wg.Wait()
}

// rule is one rule of the suite: its subtest's name and body.
type rule struct {
	name string
	fn   func(*env)
}

// runOne runs r's subtest on a fresh Harness.
func runOne(t *testing.T, r rule, newHarness HarnessMaker, makeMu *sync.Mutex) {
	setup, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	makeMu.Lock()
	h, err := newHarness(setup, t)
	makeMu.Unlock()
	if err != nil {
		t.Fatalf("making harness: %v", err)
	}
	t.Cleanup(h.Close) // registered first, so it runs after every Backend's Close
	ttl := h.TTL()
	if ttl <= 0 {
		t.Fatalf("harness TTL is %v; want > 0", ttl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+30*ttl)
	t.Cleanup(cancel)
	r.fn(&env{T: t, h: h, ttl: ttl, ctx: ctx, base: uniqueName(r.name)})
}

// parallelism is how many subtests Run runs at once: the -test.parallel
// flag's value (1 outside go test), at most GOMAXPROCS.
func parallelism() int {
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n > 0 {
			return min(n, runtime.GOMAXPROCS(0))
		}
	}
	return 1
}

// env is one subtest's state.
type env struct {
	*testing.T
	h    Harness
	ttl  time.Duration
	ctx  context.Context // the watchdog
	base string          // unique election name prefix
}

func uniqueName(test string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "backendtest/" + test + "-" + hex.EncodeToString(b[:])
}

// election returns a unique election name for this subtest.
func (e *env) election(suffix string) string { return e.base + "/" + suffix }

// backend makes a Backend closed at the end of the subtest.
func (e *env) backend() backend.Backend {
	e.Helper()
	b, err := e.h.MakeBackend(e.ctx)
	if err != nil {
		e.Fatalf("MakeBackend: %v", err)
	}
	e.Cleanup(func() { _ = b.Close() })
	return b
}

// candidate is the Candidate with the harness TTL.
func (e *env) candidate(election, id string) backend.Candidate {
	return backend.Candidate{Election: election, Identity: id, TTL: e.ttl}
}

// handoff is the bound on a graceful hand-over: well below the TTL, so that
// a hand-over cannot pass by waiting for an expiry.
func (e *env) handoff() time.Duration { return e.ttl / 2 }

// prompt is the bound on returning after a context ends.
func (e *env) prompt() time.Duration { return 500*time.Millisecond + e.ttl/10 }

// acquire campaigns and fails the test unless it wins.
func (e *env) acquire(b backend.Backend, c backend.Candidate) backend.Lease {
	e.Helper()
	l, err := b.Campaign(e.ctx, c)
	if err != nil {
		e.Fatalf("Campaign(%q, %q): got error %v, want a lease: the election is free or will be", c.Election, c.Identity, err)
	}
	if !l.Deadline().After(time.Now()) {
		e.Fatalf("Campaign(%q): got Deadline %v in the past, want a future one: a new lease is valid", c.Election, time.Until(l.Deadline()))
	}
	return l
}

// release releases l and fails the test on error.
func (e *env) release(l backend.Lease) {
	e.Helper()
	if err := l.Release(e.ctx); err != nil {
		e.Fatalf("Release: got %v, want nil: a live lease can be released", err)
	}
}

// result is the outcome of a background Campaign.
type result struct {
	l   backend.Lease
	err error
	at  time.Time // when Campaign returned
}

// campaignAsync campaigns in the background; the result arrives on the
// returned channel. The Campaign ends with the subtest at the latest.
func (e *env) campaignAsync(ctx context.Context, b backend.Backend, c backend.Candidate) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := b.Campaign(ctx, c)
		ch <- result{l, err, time.Now()}
	}()
	return ch
}

// wait waits for a background Campaign up to d and fails the test if it did
// not win.
func (e *env) wait(ch <-chan result, d time.Duration, rule string) result {
	e.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			e.Fatalf("Campaign: got error %v, want a lease: %s", r.err, rule)
		}
		return r
	case <-time.After(d):
		e.Fatalf("Campaign: got no lease within %v, want one: %s", d, rule)
	case <-e.ctx.Done():
		e.Fatalf("watchdog: subtest ran out of time waiting for a Campaign: %s", rule)
	}
	return result{}
}

// holdOff asserts that a background Campaign does not win for d.
func (e *env) holdOff(ch <-chan result, d time.Duration, rule string) {
	e.Helper()
	select {
	case r := <-ch:
		e.Fatalf("Campaign returned (lease %v, error %v) while the election was held, want it to keep waiting: %s", r.l != nil, r.err, rule)
	case <-time.After(d):
	}
}

// lapse makes l stop being renewed: the harness crashes its backend when it
// can; otherwise the suite simply never renews it again.
func (e *env) lapse(b backend.Backend) {
	if c, ok := e.h.(Crasher); ok {
		c.Crash(b)
	}
}

// isLost asserts that l's Lost channel is closed within d.
func (e *env) isLost(l backend.Lease, d time.Duration, rule string) {
	e.Helper()
	select {
	case <-l.Lost():
	case <-time.After(d):
		e.Fatalf("Lost(): got an open channel %v later, want it closed: %s", d, rule)
	}
}

// leaderIs asserts that b reports want as the holder of election.
func (e *env) leaderIs(b backend.Backend, election, id string, token uint64, rule string) {
	e.Helper()
	h, err := b.Leader(e.ctx, election)
	if err != nil {
		e.Fatalf("Leader(%q): got error %v, want holder %q token %d: %s", election, err, id, token, rule)
	}
	if h.Identity != id || h.Token != token || h.Election != election {
		e.Fatalf("Leader(%q): got %+v, want election %q identity %q token %d: %s", election, h, election, id, token, rule)
	}
	if h.TTL < 0 || h.TTL > e.ttl+time.Second {
		e.Fatalf("Leader(%q): got TTL %v, want 0 (unknown) or at most the lease TTL %v: TTL is the time left", election, h.TTL, e.ttl)
	}
}

// noLeader asserts that b reports no holder of election.
func (e *env) noLeader(b backend.Backend, election, rule string) {
	e.Helper()
	h, err := b.Leader(e.ctx, election)
	if !errors.Is(err, backend.ErrNoLeader) {
		e.Fatalf("Leader(%q): got (%+v, %v), want an error wrapping ErrNoLeader: %s", election, h, err, rule)
	}
}
