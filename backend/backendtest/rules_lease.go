package backendtest

import (
	"context"
	"errors"
	"time"

	"github.com/leaderkit/elector/backend"
)

func testCampaignFree(e *env) {
	b := e.backend()
	name := e.election("free")
	start := time.Now()
	l := e.acquire(b, e.candidate(name, "alice"))
	if l.Token() == 0 {
		e.Fatalf("Token: got 0, want > 0: 0 means no token")
	}
	// The deadline stems from a request sent during the Campaign (which may
	// have waited, to reconnect for one) or from one answered since: it is
	// at most a TTL after now.
	d := l.Deadline()
	if now := time.Now(); d.After(now.Add(e.ttl + time.Second)) {
		e.Fatalf("Deadline: got %v after the Campaign started, %v from now; want at most TTL %v (+1s rounding) from now: the deadline is conservative", d.Sub(start), d.Sub(now), e.ttl)
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
