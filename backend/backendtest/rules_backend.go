package backendtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
)

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
