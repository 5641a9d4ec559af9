package backendtest

import (
	"context"
	"errors"

	"slices"
	"strings"
	"time"

	"github.com/leaderkit/elector/backend"
)

// registry returns b as a Registry, or skips the subtest.
func (e *env) registry(b backend.Backend) backend.Registry {
	e.Helper()
	r, ok := b.(backend.Registry)
	if !ok {
		e.Skip("driver does not implement backend.Registry")
	}
	return r
}

// register registers c on r and fails the test on error.
func (e *env) register(r backend.Registry, c backend.Candidate, priority int, aside bool) backend.Registration {
	e.Helper()
	c.Priority = priority
	reg, err := r.Register(e.ctx, c, aside)
	if err != nil {
		e.Fatalf("Register(%q, %q): got error %v, want an entry", c.Election, c.Identity, err)
	}
	if reg.ID() == "" {
		e.Fatalf("Register(%q, %q): got an empty ID, want one that tells the entry apart", c.Election, c.Identity)
	}
	return reg
}

// entriesAre asserts that r lists exactly want (IDs included) for election.
func (e *env) entriesAre(r backend.Registry, election string, want []backend.Entry, rule string) {
	e.Helper()
	got, err := r.Entries(e.ctx, election)
	if err != nil {
		e.Fatalf("Entries(%q): got error %v, want %v: %s", election, err, want, rule)
	}
	if !sameEntries(got, want) {
		e.Fatalf("Entries(%q): got %v, want %v: %s", election, got, want, rule)
	}
}

func sameEntries(got, want []backend.Entry) bool {
	cmp := func(a, b backend.Entry) int { return strings.Compare(a.ID, b.ID) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, cmp)
	slices.SortFunc(want, cmp)
	return slices.Equal(got, want)
}

// testRegistry: entries are listed by every Backend of the store, with
// their priority and aside flag; SetAside and Withdraw show at once; the
// registry of one election does not mix with another's, even one whose name
// it prefixes; and an entry is no candidate: it does not hold the election
// nor delay a campaign.
func testRegistry(e *env) {
	a, b, c := e.backend(), e.backend(), e.backend()
	ra, rb, rc := e.registry(a), e.registry(b), e.registry(c)
	name := e.election("reg")
	e.entriesAre(rc, name, nil, "a new election has no entries")

	alice := e.register(ra, e.candidate(name, "alice"), 2, false)
	bob := e.register(rb, e.candidate(name, "bob the builder"), 7, true)
	sub := e.register(rb, e.candidate(name+"/sub", "carol"), 1, false)
	if alice.ID() == bob.ID() {
		e.Fatalf("Register: got ID %q twice, want distinct IDs: IDs tell entries apart", alice.ID())
	}
	want := []backend.Entry{
		{ID: alice.ID(), Identity: "alice", Priority: 2},
		{ID: bob.ID(), Identity: "bob the builder", Priority: 7, Aside: true},
	}
	e.entriesAre(rc, name, want, "every Backend of the store lists the entries, as registered")
	e.entriesAre(rc, name+"/sub", []backend.Entry{{ID: sub.ID(), Identity: "carol", Priority: 1}}, "names that prefix one another have registries of their own")

	e.noLeader(c, name, "an entry does not hold the election")
	start := time.Now()
	l := e.acquire(c, e.candidate(name, "dave"))
	if took := time.Since(start); took > e.handoff() {
		e.Fatalf("Campaign beside entries: took %v, want at most %v: an entry is not a candidate in the queue", took, e.handoff())
	}
	e.release(l)

	if err := alice.SetAside(e.ctx, true); err != nil {
		e.Fatalf("SetAside(true): got %v, want nil: the entry is live", err)
	}
	if err := bob.Refresh(e.ctx); err != nil {
		e.Fatalf("Refresh: got %v, want nil: the entry is live", err)
	}
	want[0].Aside = true
	e.entriesAre(rc, name, want, "SetAside shows in the next read")

	if err := alice.Withdraw(e.ctx); err != nil {
		e.Fatalf("Withdraw: got %v, want nil", err)
	}
	e.entriesAre(rc, name, want[1:], "Withdraw removes the entry")
	if err := alice.Refresh(e.ctx); !errors.Is(err, backend.ErrLost) {
		e.Fatalf("Refresh after Withdraw: got %v, want an error wrapping ErrLost: the entry is gone", err)
	}
	if err := alice.Withdraw(e.ctx); err != nil && !errors.Is(err, backend.ErrLost) {
		e.Fatalf("second Withdraw: got %v, want nil or ErrLost", err)
	}
	for _, r := range []backend.Registration{bob, sub} {
		if err := r.Withdraw(e.ctx); err != nil {
			e.Fatalf("Withdraw: got %v, want nil", err)
		}
	}
	e.entriesAre(rc, name, nil, "every entry withdrawn")
}

// testRegistryWatch: WatchEntries reports the entries, then each change.
func testRegistryWatch(e *env) {
	a, b := e.backend(), e.backend()
	ra, rb := e.registry(a), e.registry(b)
	name := e.election("regwatch")
	ctx, cancel := context.WithCancel(e.ctx)
	seen := make(chan []backend.Entry, 64)
	done := make(chan error, 1)
	go func() {
		done <- rb.WatchEntries(ctx, name, func(l []backend.Entry) { seen <- slices.Clone(l) })
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				e.Errorf("WatchEntries after cancel: got %v, want context.Canceled unwrapped", err)
			}
		case <-time.After(e.prompt()):
			e.Errorf("WatchEntries: still running %v after its ctx ended, want it returned: methods return promptly once ctx is done", e.prompt())
			<-done
		}
	}()
	next := func(want []backend.Entry, rule string) {
		e.Helper()
		timeout := time.After(e.handoff() + time.Second)
		for {
			select {
			case got := <-seen:
				if sameEntries(got, want) {
					return
				}
			case <-timeout:
				e.Fatalf("WatchEntries: %v never reported within %v: %s", want, e.handoff()+time.Second, rule)
			}
		}
	}
	next(nil, "the first call reports no entries")
	alice := e.register(ra, e.candidate(name, "alice"), 3, false)
	next([]backend.Entry{{ID: alice.ID(), Identity: "alice", Priority: 3}}, "a new entry is reported")
	if err := alice.SetAside(e.ctx, true); err != nil {
		e.Fatalf("SetAside: %v", err)
	}
	next([]backend.Entry{{ID: alice.ID(), Identity: "alice", Priority: 3, Aside: true}}, "a changed aside flag is reported")
	if err := alice.Withdraw(e.ctx); err != nil {
		e.Fatalf("Withdraw: %v", err)
	}
	next(nil, "a withdrawn entry is reported gone")
}

// testRegistryLiveness: the entries of a closed Backend disappear within a
// TTL, and those of a crashed one (when the harness can crash one) within a
// TTL after its last refresh, as the store expires them (plus the harness's
// ExpiryLag).
func testRegistryLiveness(e *env) {
	a, b := e.backend(), e.backend()
	ra, rb := e.registry(a), e.registry(b)
	name := e.election("reglive")
	e.register(ra, e.candidate(name, "alice"), 1, false)
	if err := a.Close(); err != nil {
		e.Fatalf("Close: %v", err)
	}
	e.entriesGone(rb, name, 2*e.ttl+time.Second, "the entries of a closed Backend lapse")
	c, ok := e.h.(Crasher)
	if !ok {
		return
	}
	d := e.backend()
	e.register(e.registry(d), e.candidate(name, "dave"), 1, false)
	c.Crash(d)
	bound := 3*e.ttl + time.Second
	if l, ok := e.h.(ExpiryLagger); ok {
		bound += l.ExpiryLag()
	}
	e.entriesGone(rb, name, bound, "the entries of a crashed process lapse")
}

// entriesGone waits up to d for election to have no entries.
func (e *env) entriesGone(r backend.Registry, election string, d time.Duration, rule string) {
	e.Helper()
	deadline := time.Now().Add(d)
	for {
		got, err := r.Entries(e.ctx, election)
		if err == nil && len(got) == 0 {
			return
		}
		if time.Now().After(deadline) {
			e.Fatalf("Entries(%q): got (%v, %v) %v later, want none: %s", election, got, err, d, rule)
		}
		select {
		case <-time.After(e.ttl / 10):
		case <-e.ctx.Done():
			e.Fatalf("watchdog: %s", rule)
		}
	}
}
