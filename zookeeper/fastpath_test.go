package zookeeper

import (
	"errors"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/backend"
)

// TestUncontendedCampaignOneRead: an uncontended Campaign leads from the
// listing pipelined behind its create, with no read of its own znode, and
// its token is still the znode's czxid (taken from the create's reply):
// after earlier terms, in a session that holds other leases, and with
// eight goroutines campaigning at once on one session. The first Campaign
// of an election also creates the election's znode, and may read again.
// Not t.Parallel: fastLeads counts every Campaign in the process.
func TestUncontendedCampaignOneRead(t *testing.T) {
	f := newFixture(t)
	b, _ := f.backend(nil)
	other := "other-" + randomSuffix()
	held := f.acquire(b, other, "alice")
	defer held.Release(f.ctx)
	check := func(t *testing.T, l *lease) {
		t.Helper()
		if _, err := f.admin.Sync(l.path); err != nil { // the admin's server may lag
			t.Fatal(err)
		}
		ok, st, err := f.admin.Exists(l.path)
		if err != nil || !ok {
			t.Fatalf("Exists(%s): (%v, %v), want the znode", l.path, ok, err)
		}
		if l.Token() != uint64(st.Czxid) {
			t.Errorf("token %x, want the znode's czxid %x", l.Token(), st.Czxid)
		}
		if st.EphemeralOwner != l.session {
			t.Errorf("znode owned by %x, lease's session %x", st.EphemeralOwner, l.session)
		}
		if err := l.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	e := "fast-" + randomSuffix()
	check(t, f.acquire(b, e, "alice"))
	for term := 1; term < 4; term++ {
		before := fastLeads.Load()
		l := f.acquire(b, e, "alice")
		if got := fastLeads.Load() - before; got != 1 {
			t.Errorf("term %d: Campaign led at once %d times, want 1 (from the listing behind its create)", term, got)
		}
		check(t, l)
	}
	var wg sync.WaitGroup
	for range 8 {
		e := "fast-" + randomSuffix()
		wg.Go(func() {
			for range 10 {
				l, err := b.Campaign(f.ctx, backend.Candidate{Election: e, Identity: "bob", TTL: testTTL})
				if err != nil {
					t.Error(err)
					return
				}
				check(t, l.(*lease))
			}
		})
	}
	wg.Wait()
}

// TestLeadsAtOnce: the listing behind the create decides only for the first
// candidate, in the session that created it, connected all along.
func TestLeadsAtOnce(t *testing.T) {
	t.Parallel()
	st := state{id: 7, up: true}
	name := protectedPrefix + "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f-" + latchLock + "0000000004"
	ls := &listing{kids: []string{name}, stat: &zk.Stat{}}
	if !leadsAtOnce(ls, name, st, st) {
		t.Errorf("leadsAtOnce: false for the only candidate")
	}
	older := protectedPrefix + "1f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f-" + latchLock + "0000000003"
	if leadsAtOnce(&listing{kids: []string{name, older}, stat: &zk.Stat{}}, name, st, st) {
		t.Errorf("leadsAtOnce: true behind an older candidate")
	}
	if leadsAtOnce(&listing{kids: []string{older}, stat: &zk.Stat{}}, name, st, st) {
		t.Errorf("leadsAtOnce: true on a listing read before the create")
	}
	if leadsAtOnce(ls, name, st, state{id: 8, up: true}) {
		t.Errorf("leadsAtOnce: true after the session changed")
	}
	if leadsAtOnce(ls, name, st, state{id: 7, up: true, epoch: 1}) {
		t.Errorf("leadsAtOnce: true after a disconnection")
	}
}

// TestCreatedFirstPrefersTheListing: a create that was written and
// succeeded gets the listing behind it even when its answer is in by the
// time the campaign looks, so a slow scheduler does not cost the fast
// path; a create answered before it was written ends the attempt at once,
// and so does a failed one whose answer is in when the campaign looks.
func TestCreatedFirstPrefersTheListing(t *testing.T) {
	t.Parallel()
	closedCh := make(chan struct{})
	close(closedCh)
	for i := range 200 {
		cc := make(chan created, 1)
		cc <- created{path: "/e/c-0000000001"}
		if r, done := createdFirst(closedCh, cc); done {
			t.Fatalf("try %d: written and answered: got done with %+v, want the listing first", i, r)
		}
		if r := <-cc; r.path != "/e/c-0000000001" {
			t.Fatalf("try %d: the outcome put back is %+v, want the create's", i, r)
		}
	}
	cc := make(chan created, 1)
	for i := range 200 {
		cc <- created{err: zk.ErrNoNode}
		r, done := createdFirst(closedCh, cc)
		if !done { // the listing goes first; the error waits in cc
			r = <-cc
		}
		if !errors.Is(r.err, zk.ErrNoNode) {
			t.Fatalf("try %d: failed create: got %+v, want ErrNoNode", i, r)
		}
	}
	cc <- created{path: "/e/c-0000000002"}
	if r, done := createdFirst(make(chan struct{}), cc); !done || r.path != "/e/c-0000000002" {
		t.Errorf("answered, not written: got %+v, %v; want the outcome, done", r, done)
	}
}

// TestAcquireReleaseRequests: an uncontended Campaign and its Release cost
// one create, the listing pipelined behind it and one delete: no read of
// the candidate's own znode, no watch request of its own. The first
// Campaign of an election, which makes the election's znode, also leads
// from a listing pipelined behind its create. Not t.Parallel: fastLeads
// counts every Campaign in the process.
func TestAcquireReleaseRequests(t *testing.T) {
	f := newFixture(t)
	b, d := f.backend(nil)
	e := "requests-" + randomSuffix()
	fast := fastLeads.Load()
	if err := f.acquire(b, e, "alice").Release(f.ctx); err != nil { // makes the election's znode
		t.Fatal(err)
	}
	if got := fastLeads.Load() - fast; got != 1 {
		t.Errorf("the first Campaign of an election led from a listing %d times, want 1: the listing is pipelined again behind the create that follows the election znode's", got)
	}
	const rounds = 5
	before := d.ops.snapshot()
	for range rounds {
		if err := f.acquire(b, e, "alice").Release(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A new election: its znode's create goes ahead of the candidate's,
	// with no failed create first.
	l := f.acquire(b, "requests-new-"+randomSuffix(), "alice")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
	b.Close() // waits for the Backend's goroutines: their requests are counted
	got := d.ops.snapshot()
	want := map[int]int64{opContainer: 1, opCreate: rounds + 1, opGetChildren2: rounds + 1, opDelete: rounds + 1}
	for op, n := range got {
		if n -= before[op]; op != opPing && n != want[op] {
			t.Errorf("opcode %d: %d requests in %d rounds of Campaign+Release and one Campaign+Release in a new election, want %d", op, n, rounds, want[op])
		}
	}
}

// TestReapedElectionZnode: a Campaign in an election whose znode the
// Backend made, and the server removed since (an empty container is
// reaped, and then its empty parent), makes them again.
func TestReapedElectionZnode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	root := testPrefix + "-reaped-" + randomSuffix()
	b, _ := f.backend(&Options{Prefix: root})
	for _, gone := range [][]string{{"/e"}, {"/e", ""}} {
		l := f.acquire(b, "e", "alice")
		if err := l.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
		for _, p := range gone { // as the server reaps empty containers, bottom up
			if err := f.admin.Delete(root+p, -1); err != nil {
				t.Fatal(err)
			}
		}
	}
	l := f.acquire(b, "e", "alice")
	if err := l.Release(f.ctx); err != nil {
		t.Fatal(err)
	}
}
