package zookeeper

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestHeldLeasesNoGoroutine: a held lease costs no goroutine of its own;
// the session's dispatcher follows them all. Not t.Parallel: it counts the
// goroutines of the whole process.
func TestHeldLeasesNoGoroutine(t *testing.T) {
	f := newFixture(t)
	b, _ := f.backend(nil)
	base := "cost-" + randomSuffix()
	f.acquire(b, base+"-first", "alice") // the session and its goroutines
	const n = 40
	before := runtime.NumGoroutine()
	leases := make([]*lease, n)
	for i := range leases {
		leases[i] = f.acquire(b, fmt.Sprintf("%s-%d", base, i), "alice")
	}
	if grown := runtime.NumGoroutine() - before; grown > n/4 {
		t.Errorf("holding %d more leases grew the goroutines by %d; want at most %d: one dispatcher per session, not a goroutine per lease", n, grown, n/4)
	}
	for _, l := range leases {
		if err := l.Release(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchFollowsContention: candidates joining and leaving a held
// election fire the leader's watch; the leader stays leader, its watch is
// armed again, and the deletion of its znode behind its back still ends
// the lease.
func TestWatchFollowsContention(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, _ := f.backend(nil)
	b, _ := f.backend(nil)
	election := "contended-" + randomSuffix()
	l := f.acquire(a, election, "alice")
	for range 3 {
		// The round's join must come after the watch is armed again:
		// a join that the re-arming listing (after the last round's
		// deletion) already sees fires no event.
		eventually(t, 5*time.Second, l.watching, "the leader's watch is armed again after bob's znode went")
		fired := l.fires.Load()
		waiting := f.campaignAsync(b, election, "bob")
		f.awaitCandidates(election, 2, 5*time.Second, "bob queues")
		eventually(t, 5*time.Second, func() bool { return l.fires.Load() > fired && l.watching() }, "the leader's watch fires on bob's znode and is armed again")
		if lost(l) {
			t.Fatal("a candidate joining ended the leader's lease")
		}
		for _, k := range f.candidates(election) {
			if k != l.name { // bob's znode goes: bob's Campaign fails
				if err := f.admin.Delete(l.dir+"/"+k, -1); err != nil {
					t.Fatal(err)
				}
			}
		}
		if r := <-waiting; r.err == nil {
			t.Fatal("bob's Campaign led while alice held the election")
		}
	}
	if err := f.admin.Delete(l.path, -1); err != nil {
		t.Fatal(err)
	}
	awaitLost(t, l, 5*time.Second, "the znode deleted behind the lease's back ends it")
}

// TestHeldDeadlineStaysAhead: a session holding a lease that nobody
// renews sends a request of its own when it has been quiet for a twelfth
// of its timeout, so that its answers are confirmed (report.go) soon after
// the report lag, and its Deadline trails by little more than that lag
// (with go-zookeeper's pings alone, a third of the TTL apart, it would
// trail by up to the lag and two thirds of the TTL).
//
// The test counts those requests (exists requests, which nothing else
// sends on an idle session) rather than measure the Deadline's lead, which
// a loaded host's stalls eat: at a 2 s TTL on the test ensemble (report
// lag 0.7 s) the session's requests keep the Deadline 0.98 s ahead on an
// idle host and 0.79 s at load 9 on 2 cores, and pings alone let it pass.
// Over two TTLs the session sends about two dozen; a window with fewer
// than one per sixth of the TTL (twice the pings' pace) is measured again,
// up to three: pings alone send none.
func TestHeldDeadlineStaysAhead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, d := f.backend(nil)
	l := f.acquire(b, "ahead-"+randomSuffix(), "alice")
	defer l.Release(f.ctx)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	window := 2 * testTTL
	want := int64(window / (testTTL / 6))
	var sent []int64
	for range 3 {
		least, before := testTTL, d.exists.Load()
		for end := time.Now().Add(window); time.Now().Before(end); <-tick.C {
			least = min(least, time.Until(l.Deadline()))
		}
		n := d.exists.Load() - before
		t.Logf("the session sent %d requests of its own over %v; the Deadline was at least %v ahead", n, window, least)
		if n >= want {
			return
		}
		sent = append(sent, n)
	}
	t.Errorf("an idle held lease's session sent %v requests of its own in three windows of %v; want at least %d in one: it sends one when quiet for a twelfth of the TTL", sent, window, want)
}
