package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// Run runs the conformance suite against the driver behind newHarness, one
// named subtest per rule, each with a fresh Harness and a watchdog: every
// call the suite makes carries a context that ends 60 s + 30 TTL after the
// subtest starts.
func Run(t *testing.T, newHarness HarnessMaker) {
	tests := []struct {
		name string
		fn   func(*env)
	}{
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
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			setup, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h, err := newHarness(setup, t)
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
			tc.fn(&env{T: t, h: h, ttl: ttl, ctx: ctx, base: uniqueName(tc.name)})
		})
	}
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

func testCampaignFree(e *env) {
	b := e.backend()
	name := e.election("free")
	start := time.Now()
	l := e.acquire(b, e.candidate(name, "alice"))
	if l.Token() == 0 {
		e.Fatalf("Token: got 0, want > 0: 0 means no token")
	}
	if d := l.Deadline(); d.After(start.Add(e.ttl + time.Second)) {
		e.Fatalf("Deadline: got %v after the Campaign started, want at most TTL %v (+1s rounding): the deadline is conservative", d.Sub(start), e.ttl)
	}
	e.leaderIs(b, name, "alice", l.Token(), "the winner is the leader")
	e.release(l)
	e.isLost(l, e.prompt(), "a released lease is finished")
	if err := l.Renew(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("Renew after Release: got %v, want an error wrapping ErrLost: a released lease cannot come back", err)
	}
	if err := l.Release(e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
		e.Fatalf("second Release: got %v, want nil or ErrLost: releasing twice is harmless", err)
	}
}

func testInvalidNames(e *env) {
	b := e.backend()
	for _, name := range []string{"", "a//b", "/a", "a/", "a/../b", "nul\x00byte", "tab\there", string([]byte{0xff, 0xfe})} {
		_, err := b.Campaign(e.ctx, e.candidate(name, "alice"))
		if !errors.Is(err, backend.ErrInvalid) {
			e.Errorf("Campaign(%q): got %v, want an error wrapping ErrInvalid: backend.ValidateElection refuses it", name, err)
		}
		_, err = b.Leader(e.ctx, name)
		if !errors.Is(err, backend.ErrInvalid) {
			e.Errorf("Leader(%q): got %v, want an error wrapping ErrInvalid: backend.ValidateElection refuses it", name, err)
		}
	}
}

func testSecondCandidateWaits(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("held")
	la := e.acquire(a, e.candidate(name, "alice"))
	ctx, cancel := context.WithTimeout(e.ctx, e.ttl/4)
	defer cancel()
	lb, err := b.Campaign(ctx, e.candidate(name, "bob"))
	if err == nil {
		e.Fatalf("Campaign while held: got lease token %d, want context.DeadlineExceeded: one holder at a time", lb.Token())
	}
	if err != context.DeadlineExceeded {
		e.Fatalf("Campaign while held: got %v, want context.DeadlineExceeded unwrapped: a campaign ends with its ctx", err)
	}
	if err := la.Renew(e.ctx); err != nil {
		e.Fatalf("holder's Renew: got %v, want nil: a waiting candidate does not disturb the holder", err)
	}
	e.leaderIs(b, name, "alice", la.Token(), "the holder stays the leader")
}

func testSameBackendCandidates(e *env) {
	b := e.backend()
	name := e.election("same-backend")
	l1 := e.acquire(b, e.candidate(name, "alice"))
	ch := e.campaignAsync(e.ctx, b, e.candidate(name, "alice"))
	e.holdOff(ch, e.ttl/5, "two Campaigns on one Backend are two candidates")
	e.release(l1)
	r := e.wait(ch, e.handoff(), "the second candidate on the Backend wins after the first releases")
	if r.l.Token() <= l1.Token() {
		e.Fatalf("second lease token: got %d, want > %d: tokens increase", r.l.Token(), l1.Token())
	}
	e.release(r.l)
}

func testReleaseHandsOver(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("handover")
	la := e.acquire(a, e.candidate(name, "alice"))
	ch := e.campaignAsync(e.ctx, b, e.candidate(name, "bob"))
	e.holdOff(ch, e.ttl/5, "a held election is not granted")
	released := time.Now()
	e.release(la)
	r := e.wait(ch, e.handoff(), "Release hands the election to a waiting candidate at once, not after a TTL")
	e.Logf("hand-over took %v", r.at.Sub(released))
	if r.l.Token() <= la.Token() {
		e.Fatalf("successor token: got %d, want > %d: tokens strictly increase", r.l.Token(), la.Token())
	}
	if err := la.Renew(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("released lease's Renew: got %v, want ErrLost: it must not take the successor's lease", err)
	}
	e.leaderIs(a, name, "bob", r.l.Token(), "the successor leads")
	e.release(r.l)
}

// testFailedReleaseGivesUp: a Release that fails (here its ctx ended before
// it could reach the store) gives the election up all the same. Its caller
// has stopped acting and will not renew the lease again, so the lease ends
// for it at once, and the election is free no later than the lease's
// Deadline (plus a hand-over) — even while another lease of the same
// Backend is renewed: a shared etcd lease or ZooKeeper session must not
// keep the abandoned key alive (a partition then stayed ownerless for 14 s
// in the etcd partition chaos).
func testFailedReleaseGivesUp(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("failed")
	other := e.acquire(a, e.candidate(e.election("other"), "alice"))
	la := e.acquire(a, e.candidate(name, "alice"))
	ch := e.campaignAsync(e.ctx, b, e.candidate(name, "bob"))
	e.holdOff(ch, e.ttl/5, "a held election is not granted")

	stop := make(chan struct{})
	renewed := make(chan error, 1)
	go func() { // the Backend's other lease stays renewed throughout
		t := time.NewTicker(e.ttl / 4)
		defer t.Stop()
		for {
			select {
			case <-stop:
				renewed <- nil
				return
			case <-t.C:
				if err := other.Renew(e.ctx); err != nil {
					renewed <- err
					return
				}
			}
		}
	}()
	gone, cancel := context.WithCancel(e.ctx)
	cancel()
	deadline := la.Deadline()
	if err := la.Release(gone); err == nil {
		e.Logf("Release with an ended ctx succeeded; the driver released anyway")
	}
	select {
	case <-la.Lost():
	default:
		e.Fatalf("Lost(): open when the failed Release returned (%v before the Deadline), want it closed: a failed Release gives the lease up, its holder has stopped", time.Until(deadline))
	}
	if err := la.Renew(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("Renew after a failed Release: got %v, want an error wrapping ErrLost: the lease was given up", err)
	}
	r := e.wait(ch, time.Until(deadline)+e.handoff(), "after a failed Release the election is free by the lease's Deadline, even while another lease of the Backend is renewed")
	e.Logf("successor elected %v after the failed lease's Deadline", r.at.Sub(deadline))
	close(stop)
	if err := <-renewed; err != nil {
		e.Fatalf("Renew of the Backend's other lease: got %v, want nil: a failed Release gives up only its own lease", err)
	}
	if err := la.Release(e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
		e.Fatalf("Release again after a failed one: got %v, want nil or ErrLost", err)
	}
	e.leaderIs(a, name, "bob", r.l.Token(), "the successor leads; the abandoned lease removed only itself")
	e.release(r.l)
	e.release(other)
}

func testRenewKeepsLease(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("renew")
	l := e.acquire(a, e.candidate(name, "alice"))
	ch := e.campaignAsync(e.ctx, b, e.candidate(name, "bob"))
	// Renew every TTL/4 for 2 TTL: the lease must outlive its first TTL.
	prev := l.Deadline()
	for i := range 8 {
		e.holdOff(ch, e.ttl/4, "a renewed lease keeps the election")
		if err := l.Renew(e.ctx); err != nil {
			e.Fatalf("Renew #%d: got %v, want nil: the holder renews", i+1, err)
		}
		d := l.Deadline()
		if d.Before(prev) {
			e.Fatalf("Deadline after Renew #%d: moved back by %v, want it never to move back", i+1, prev.Sub(d))
		}
		prev = d
	}
	select {
	case <-l.Lost():
		e.Fatalf("Lost(): closed on a renewed lease, want open: renewal keeps the lease")
	default:
	}
	e.leaderIs(b, name, "alice", l.Token(), "a renewed lease keeps the election")
	e.release(l)
	r := e.wait(ch, e.handoff(), "the waiter wins after the release")
	e.release(r.l)
}

func testExpiryTakeover(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("expiry")
	la := e.acquire(a, e.candidate(name, "alice"))
	deadline := la.Deadline()
	e.lapse(a)
	start := time.Now()
	r := e.wait(e.campaignAsync(e.ctx, b, e.candidate(name, "bob")), 2*e.ttl+time.Second,
		"an unrenewed lease expires within about its TTL and is taken over")
	e.Logf("takeover after %v (TTL %v)", r.at.Sub(start), e.ttl)
	if r.at.Before(deadline) {
		e.Fatalf("successor elected %v before the lapsed lease's Deadline, want after it: Deadline is conservative", deadline.Sub(r.at))
	}
	if r.l.Token() <= la.Token() {
		e.Fatalf("successor token: got %d, want > %d: tokens strictly increase across expiry", r.l.Token(), la.Token())
	}
	e.release(r.l)
}

func testStaleLease(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("stale")
	la := e.acquire(a, e.candidate(name, "alice"))
	deadline := la.Deadline()
	if x, ok := e.h.(Expirer); ok {
		x.Expire(la)
	}
	r := e.wait(e.campaignAsync(e.ctx, b, e.candidate(name, "bob")), 2*e.ttl+time.Second,
		"an expired lease is taken over")
	if _, ok := e.h.(Expirer); !ok && r.at.Before(deadline) {
		e.Fatalf("successor elected %v before the stale lease's Deadline, want after it", deadline.Sub(r.at))
	}
	if err := la.Renew(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("stale Renew: got %v, want an error wrapping ErrLost: a stale lease must not renew its successor's", err)
	}
	e.isLost(la, e.prompt(), "a lease found gone by Renew is signalled lost")
	if err := la.Release(e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
		e.Fatalf("stale Release: got %v, want nil or ErrLost", err)
	}
	e.leaderIs(a, name, "bob", r.l.Token(), "a stale lease's Release leaves the successor in place")
	if err := r.l.Renew(e.ctx); err != nil {
		e.Fatalf("successor's Renew after the stale Release: got %v, want nil: the stale lease removed only itself", err)
	}
	if r.l.Token() <= la.Token() {
		e.Fatalf("successor token: got %d, want > %d", r.l.Token(), la.Token())
	}
	e.release(r.l)
}

func testLeaderReports(e *env) {
	a, b := e.backend(), e.backend()
	name, free := e.election("leader"), e.election("leader-free")
	e.noLeader(b, name, "a new election has no leader")
	e.batchAgrees(b, []string{name, free}, "a new election has no leader")
	l := e.acquire(a, e.candidate(name, "alice"))
	e.leaderIs(b, name, "alice", l.Token(), "Leader reports the holder seen from another Backend")
	e.batchAgrees(b, []string{free, name, "", name}, "Leaders reports each election as Leader does")
	e.release(l)
	e.noLeader(b, name, "a released election has no leader")
	e.batchAgrees(b, []string{name, free}, "a released election has no leader")
}

// batchAgrees asserts, when b implements [backend.BatchReader], that
// Leaders reports each of elections as Leader does: the same holder, or an
// error of the same kind (ErrNoLeader, ErrInvalid).
func (e *env) batchAgrees(b backend.Backend, elections []string, rule string) {
	e.Helper()
	br, ok := b.(backend.BatchReader)
	if !ok {
		return
	}
	hs, errs := br.Leaders(e.ctx, elections)
	if len(hs) != len(elections) || len(errs) != len(elections) {
		e.Fatalf("Leaders(%q): got %d holders and %d errors, want %d of each", elections, len(hs), len(errs), len(elections))
	}
	for i, name := range elections {
		want, werr := b.Leader(e.ctx, name)
		for _, kind := range []error{backend.ErrNoLeader, backend.ErrInvalid} {
			if errors.Is(werr, kind) != errors.Is(errs[i], kind) {
				e.Fatalf("Leaders(%q)[%d]: got error %v, Leader(%q) got %v: %s", elections, i, errs[i], name, werr, rule)
			}
		}
		if (werr == nil) != (errs[i] == nil) {
			e.Fatalf("Leaders(%q)[%d]: got error %v, Leader(%q) got %v: %s", elections, i, errs[i], name, werr, rule)
		}
		got := hs[i]
		if got.Election != want.Election || got.Identity != want.Identity || got.Token != want.Token {
			e.Fatalf("Leaders(%q)[%d]: got %+v, Leader(%q) got %+v: %s", elections, i, got, name, want, rule)
		}
		if got.TTL < 0 || got.TTL > e.ttl+time.Second {
			e.Fatalf("Leaders(%q)[%d]: got TTL %v, want 0 (unknown) or at most the lease TTL %v", elections, i, got.TTL, e.ttl)
		}
	}
}

func testCanceledCampaign(e *env) {
	a, b, c := e.backend(), e.backend(), e.backend()
	name := e.election("cancel")
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := a.Campaign(ctx, e.candidate(name, "alice")); err != context.Canceled {
		e.Fatalf("Campaign with a canceled ctx: got %v, want context.Canceled unwrapped", err)
	}
	la := e.acquire(a, e.candidate(name, "alice"))
	ctx, cancel = context.WithTimeout(e.ctx, e.ttl/5)
	defer cancel()
	ch := e.campaignAsync(ctx, b, e.candidate(name, "bob"))
	select {
	case r := <-ch:
		if r.err != context.DeadlineExceeded {
			e.Fatalf("waiting Campaign whose ctx ends: got (%v, %v), want context.DeadlineExceeded unwrapped", r.l != nil, r.err)
		}
		if late := r.at.Sub(deadlineOf(ctx)); late > e.prompt() {
			e.Fatalf("waiting Campaign returned %v after its ctx ended, want within %v: cancellation is prompt", late, e.prompt())
		}
	case <-e.ctx.Done():
		e.Fatalf("watchdog: canceled Campaign never returned")
	}
	// The abandoned campaign must leave nothing that delays the next one.
	ch = e.campaignAsync(e.ctx, c, e.candidate(name, "carol"))
	e.holdOff(ch, e.ttl/10, "the election is still held")
	e.release(la)
	r := e.wait(ch, e.handoff(), "an abandoned Campaign leaves nothing behind that delays the next candidate")
	e.leaderIs(a, name, "carol", r.l.Token(), "the abandoned candidate never leads")
	e.release(r.l)
}

// deadlineOf returns ctx's deadline, the instant it ended.
func deadlineOf(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}

func testIndependentNames(e *env) {
	a, b := e.backend(), e.backend()
	names := []string{e.election("a"), e.election("a/b"), e.election("a b"), e.election("ünïcode-名前"), e.election("a-b")}
	leases := make([]backend.Lease, len(names))
	for i, n := range names {
		// Each is free although the others are held.
		ch := e.campaignAsync(e.ctx, []backend.Backend{a, b}[i%2], e.candidate(n, fmt.Sprintf("cand-%d", i)))
		leases[i] = e.wait(ch, e.handoff(), fmt.Sprintf("election %q is independent of %q", n, names[:i])).l
	}
	for i, n := range names {
		e.leaderIs(a, n, fmt.Sprintf("cand-%d", i), leases[i].Token(), "each name has its own leader")
	}
	e.release(leases[0])
	e.noLeader(b, names[0], "the released election is free")
	for i, n := range names[1:] {
		e.leaderIs(b, n, fmt.Sprintf("cand-%d", i+1), leases[i+1].Token(), "releasing one name leaves the others held")
		if err := leases[i+1].Renew(e.ctx); err != nil {
			e.Fatalf("Renew %q after releasing %q: got %v, want nil", n, names[0], err)
		}
		e.release(leases[i+1])
	}
}

func testClose(e *env) {
	a, b := e.backend(), e.backend()
	name := e.election("close")
	la := e.acquire(a, e.candidate(name, "alice"))
	waiting := e.campaignAsync(e.ctx, a, e.candidate(e.election("close-wait"), "alice"))
	_ = e.wait(waiting, e.handoff(), "a free election is granted") // holds close-wait through a
	other := e.campaignAsync(e.ctx, a, e.candidate(name, "alice-2"))
	e.holdOff(other, e.ttl/10, "the election is held")
	if err := a.Close(); err != nil {
		e.Fatalf("Close: got %v, want nil", err)
	}
	e.isLost(la, e.prompt(), "Close finishes the Backend's leases")
	select {
	case r := <-other:
		if r.err == nil {
			e.Fatalf("Campaign waiting on a closed Backend: got a lease, want an error")
		}
	case <-time.After(e.prompt()):
		e.Fatalf("Campaign waiting on a closed Backend: still waiting after %v, want it to return", e.prompt())
	}
	if _, err := a.Campaign(e.ctx, e.candidate(e.election("other"), "alice")); !errors.Is(err, backend.ErrClosed) {
		e.Fatalf("Campaign after Close: got %v, want an error wrapping ErrClosed", err)
	}
	if _, err := a.Leader(e.ctx, name); !errors.Is(err, backend.ErrClosed) {
		e.Fatalf("Leader after Close: got %v, want an error wrapping ErrClosed", err)
	}
	if err := la.Release(e.ctx); !errors.Is(err, backend.ErrClosed) {
		e.Fatalf("Release after Close: got %v, want an error wrapping ErrClosed: the holder learns why its lease ended", err)
	}
	if err := a.Close(); err != nil {
		e.Fatalf("second Close: got %v, want nil: Close is idempotent", err)
	}
	r := e.wait(e.campaignAsync(e.ctx, b, e.candidate(name, "bob")), 2*e.ttl+time.Second,
		"a closed Backend's election is freed at once or expires")
	if r.l.Token() <= la.Token() {
		e.Fatalf("token after Close: got %d, want > %d", r.l.Token(), la.Token())
	}
	e.release(r.l)
}

func testIsolated(e *env) {
	iso, ok := e.h.(Isolator)
	if !ok {
		e.Skip("harness has no Isolator ability")
	}
	a, b := e.backend(), e.backend()
	name := e.election("isolated")
	la := e.acquire(a, e.candidate(name, "alice"))
	iso.Isolate(a)
	healed := false
	defer func() {
		if !healed {
			iso.Heal(a)
		}
	}()
	ctx, cancel := context.WithTimeout(e.ctx, e.ttl/2)
	err := la.Renew(ctx)
	cancel()
	if err == nil {
		e.Fatalf("Renew while isolated: got nil, want an error: a cut-off lease cannot be renewed")
	}
	// Read once cut off: a reply already in flight at the cut may have moved
	// it, nothing later can.
	deadline := la.Deadline()
	r := e.wait(e.campaignAsync(e.ctx, b, e.candidate(name, "bob")), 2*e.ttl+time.Second,
		"a cut-off holder's lease expires and is taken over")
	if r.at.Before(deadline) {
		e.Fatalf("successor elected %v before the cut-off lease's Deadline, want after it: the deadline is conservative", deadline.Sub(r.at))
	}
	if d := la.Deadline(); !d.Equal(deadline) {
		e.Fatalf("Deadline while cut off: moved by %v, want unchanged: nothing was acknowledged", d.Sub(deadline))
	}
	iso.Heal(a)
	healed = true
	if err := la.Renew(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("Renew after healing: got %v, want ErrLost: the lease lapsed while cut off", err)
	}
	e.release(r.l)
}

func testWatch(e *env) {
	a, b := e.backend(), e.backend()
	w, ok := b.(backend.Watcher)
	if !ok {
		e.Skip("driver does not implement backend.Watcher")
	}
	name := e.election("watch")
	ctx, cancel := context.WithCancel(e.ctx)
	seen := make(chan backend.Holder, 64)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, name, func(h backend.Holder) { seen <- h }) }()
	defer func() {
		cancel()
		if err := <-done; err != context.Canceled {
			e.Errorf("Watch after cancel: got %v, want context.Canceled unwrapped", err)
		}
	}()
	next := func(rule string, want func(backend.Holder) bool) {
		e.Helper()
		timeout := time.After(e.handoff() + time.Second)
		for {
			select {
			case h := <-seen:
				if want(h) {
					return
				}
			case <-timeout:
				e.Fatalf("Watch: no matching holder reported: %s", rule)
			}
		}
	}
	next("the first call reports no leader", backend.Holder.IsZero)
	la := e.acquire(a, e.candidate(name, "alice"))
	next("a new leader is reported", func(h backend.Holder) bool { return h.Identity == "alice" && h.Token == la.Token() })
	ch := e.campaignAsync(e.ctx, a, e.candidate(name, "bob"))
	e.release(la)
	r := e.wait(ch, e.handoff(), "the waiter wins")
	next("the successor is reported", func(h backend.Holder) bool { return h.Identity == "bob" && h.Token == r.l.Token() })
	e.release(r.l)
	next("a released election is reported leaderless", backend.Holder.IsZero)
}
