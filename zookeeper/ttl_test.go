package zookeeper

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// sessions counts the sessions b holds: campaign sessions and its read
// session.
func (b *Backend) sessionCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.sessions)
	if b.reads != nil {
		n++
	}
	return n
}

// owner returns the ephemeralOwner of a lease's znode, as the admin sees it
// once its server has caught up with the leader (the admin may be connected
// to a follower that has not yet applied the create).
func (f *fixture) owner(l backend.Lease) int64 {
	f.t.Helper()
	if _, err := f.admin.Sync(l.(*lease).path); err != nil {
		f.t.Fatalf("Sync(%s): %v", l.(*lease).path, err)
	}
	ok, st, err := f.admin.Exists(l.(*lease).path)
	if err != nil || !ok {
		f.t.Fatalf("Exists(%s): (%v, %v), want the znode", l.(*lease).path, ok, err)
	}
	return st.EphemeralOwner
}

// TestTTLsGetTheirOwnSessions campaigns with the harness TTL and twice it,
// as the conformance suite does: each lease's Deadline reflects its own TTL,
// within [sent + TTL − TTL×0.1 − 2ms, returned + TTL + 1ms], and the two
// leases live on two sessions, which Close ends.
func TestTTLsGetTheirOwnSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	suffix := randomSuffix()
	var leases []backend.Lease
	for i, ttl := range []time.Duration{testTTL, 2 * testTTL} {
		sent := time.Now()
		l, err := b.Campaign(f.ctx, backend.Candidate{Election: "ttl-" + suffix + "/" + ttl.String(), Identity: "alice", TTL: ttl})
		returned := time.Now()
		if err != nil {
			t.Fatalf("Campaign with TTL %v: %v", ttl, err)
		}
		leases = append(leases, l)
		d := l.Deadline()
		lo := sent.Add(ttl - ttl/10 - 2*time.Millisecond)
		hi := returned.Add(ttl + time.Millisecond)
		if d.Before(lo) || d.After(hi) {
			t.Fatalf("Deadline with TTL %v: got sent+%v, want within [sent+%v, returned+%v]: the lease gets the TTL asked",
				ttl, d.Sub(sent), lo.Sub(sent), hi.Sub(returned))
		}
		// The Deadline is the session's: drift allowance of 1% + 2ms.
		if want := ttl - ttl/100 - 2*time.Millisecond; d.Sub(sent) < want {
			t.Fatalf("Deadline with TTL %v: got sent+%v, want at least sent+%v (DriftFactor 0.01)", ttl, d.Sub(sent), want)
		}
		if n := b.sessionCount(); n != i+1 {
			t.Fatalf("sessions after campaigning with %d TTLs: got %d, want %d: one session per TTL", i+1, n, i+1)
		}
	}
	if a, c := f.owner(leases[0]), f.owner(leases[1]); a == c {
		t.Fatalf("ephemeralOwner: both leases on session %#x, want one session per TTL", a)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if !lost(l) {
			t.Fatal("Lost still open after Close")
		}
	}
	// Close ended both sessions: the servers deleted both znodes at once
	// (as the admin's server sees once it has caught up).
	if _, err := f.admin.Sync("/"); err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if ok, _, err := f.admin.Exists(l.(*lease).path); err != nil || ok {
			t.Fatalf("znode %s after Close: exists=%v err=%v, want it deleted with its session", l.(*lease).path, ok, err)
		}
	}
}

// TestTTLOutsideRangeRefused checks that a TTL the ensemble does not grant
// as a session timeout (the test ensemble accepts 1s to 30s), or one below
// what its timing allows (1.75s for tickTime 100ms and syncLimit 5), is
// refused with ErrInvalid naming what was asked, granted and accepted, and
// that no session made for it is left.
func TestTTLOutsideRangeRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	graced, _ := f.backend(&Options{Prefix: testPrefix, DisconnectGrace: time.Second})
	// A timing that allows 500ms, to reach the ensemble's own refusal.
	fast, _ := f.backend(&Options{Prefix: testPrefix, TickTime: 10 * time.Millisecond, SyncLimit: 1})
	for _, tc := range []struct {
		b    *Backend
		ttl  time.Duration
		want []string
	}{
		{fast, 500 * time.Millisecond, []string{"TTL 500ms", "granted a 1s session", "from 1s"}},
		{b, 1500 * time.Millisecond, []string{"TTL 1.5s is below 1.75s", "syncLimit 5 × tickTime 100ms, conf of 127.0.0.1:", "at least 1.75s", "at most 500ms"}},
		{b, 40 * time.Second, []string{"TTL 40s", "granted a 30s session", "up to 30s"}},
		{b, 0, []string{"TTL is 0s", "between 100ms"}},
		{b, time.Millisecond, []string{"TTL is 1ms", "between 100ms"}},
		{graced, 1500 * time.Millisecond, []string{"TTL is 1.5s", "twice Options.DisconnectGrace (1s)"}},
	} {
		_, err := tc.b.Campaign(f.ctx, backend.Candidate{Election: "range-" + randomSuffix(), Identity: "alice", TTL: tc.ttl})
		if !errors.Is(err, backend.ErrInvalid) {
			t.Fatalf("Campaign with TTL %v: got %v, want an error wrapping ErrInvalid", tc.ttl, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Campaign with TTL %v: got %q, want it to contain %q", tc.ttl, err, w)
			}
		}
		if n := tc.b.sessionCount(); n != 0 {
			t.Fatalf("sessions after refusing TTL %v: got %d, want 0: the refused session is closed", tc.ttl, n)
		}
	}
	// The Backends still serve a TTL the ensemble grants.
	l := f.acquire(b, "range-ok-"+randomSuffix(), "alice")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	l = f.acquire(graced, "range-ok-"+randomSuffix(), "alice")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestOneTTLOneSession checks that every lease and candidate of one TTL
// shares one session, and that reads use it rather than open their own.
func TestOneTTLOneSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	suffix := randomSuffix()
	l1 := f.acquire(b, "share-"+suffix+"/a", "alice")
	l2 := f.acquire(b, "share-"+suffix+"/b", "alice")
	waiting := f.campaignAsync(b, "share-"+suffix+"/a", "bob")
	f.awaitCandidates("share-"+suffix+"/a", 2, 10*time.Second, "bob queues")
	if a, c := f.owner(l1), f.owner(l2); a != c {
		t.Fatalf("ephemeralOwner: %#x and %#x, want one session for one TTL", a, c)
	}
	if h, err := b.Leader(f.ctx, "share-"+suffix+"/a"); err != nil || h.Token != l1.Token() {
		t.Fatalf("Leader: got (%+v, %v), want alice's term", h, err)
	}
	if n := b.sessionCount(); n != 1 {
		t.Fatalf("sessions: got %d, want 1: leases, candidates and reads of one TTL share a session", n)
	}
	if err := l1.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	r := f.await(waiting, 10*time.Second, "bob is handed the election")
	if f.owner(r.l) != f.owner(l2) {
		t.Fatal("bob's lease: another session, want the one of its TTL")
	}
	for _, l := range []backend.Lease{l2, r.l} {
		if err := l.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadsBeforeCampaign checks that a Backend that only reads holds one
// session of its own, and that its campaigns add the session of their TTL.
func TestReadsBeforeCampaign(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, _ := f.backend(nil)
	election := "reads-" + randomSuffix()
	if _, err := b.Leader(f.ctx, election); !errors.Is(err, backend.ErrNoLeader) {
		t.Fatalf("Leader of an empty election: got %v, want ErrNoLeader", err)
	}
	if n := b.sessionCount(); n != 1 {
		t.Fatalf("sessions after a read: got %d, want 1 (the read session)", n)
	}
	l := f.acquire(b, election, "alice")
	if n := b.sessionCount(); n != 2 {
		t.Fatalf("sessions after a campaign: got %d, want 2", n)
	}
	if h, err := b.Leader(f.ctx, election); err != nil || h.Token != l.Token() {
		t.Fatalf("Leader: got (%+v, %v), want alice's term", h, err)
	}
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}
