package zookeeper

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestLeaderPauseOutlivesNoDeadline pauses the ensemble's leader for longer
// than a lease's SafetyMargin and less than syncLimit × tickTime, while the
// holder renews through a follower: the follower keeps answering the holder
// without the leader counting it, and the leader, once resumed, expires the
// session by its own last count. Either the driver refuses the TTL (naming
// the ensemble's numbers), or no other candidate is elected before the
// holder's last Deadline, whichever TTL the driver accepts.
//
// It runs on the ensemble with ZooKeeper's stock timing. The holder's
// Backend talks to one follower only and the waiter's to the other, so
// neither session reaches the leader directly. Not t.Parallel: it pauses a
// server the other tests use.
func TestLeaderPauseOutlivesNoDeadline(t *testing.T) {
	servers := testenv.ZKStockServers(t)
	const first = 5 // servers[i] is server first+i for testenv.Fault
	// ZooKeeper's stock timing and session range (2 to 20 ticks).
	const tick, syncLimit = 2 * time.Second, 5
	minSession, maxSession := 2*tick, 20*tick
	window := time.Duration(syncLimit) * tick
	// The shortest TTL the driver may accept that a stock ensemble
	// grants: 2×tickTime, ZooKeeper's default minSessionTimeout.
	ttl := max(2*tick, minSession)
	// A leader pause that the followers ride out (they drop their leader
	// after syncLimit ticks without a packet, and it pinged them at most
	// half a tick before it stopped) and that outlasts the leader's last
	// count of the holder's session (at most a tick old) by more than a
	// TTL and a tick (sessions expire on tick boundaries).
	pause := window - tick
	if pause < ttl+tick+tick/2 || ttl > maxSession {
		t.Fatalf("the stock ensemble's syncLimit × tickTime (%d × %v) is too short for a leader pause the followers ride out and the TTL (%v) does not; want ZooKeeper's stock 5 × 2s", syncLimit, tick, ttl)
	}
	leader, holderAt, waiterAt := -1, -1, -1
	for i, s := range servers {
		switch testenv.ZKMode(t, s) {
		case "leader":
			leader = i
		case "follower":
			if holderAt < 0 {
				holderAt = i
			} else {
				waiterAt = i
			}
		}
	}
	if leader < 0 || waiterAt < 0 {
		t.Fatalf("want a leader and two followers among %v", servers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pause+3*MinSafeTTL(tick, syncLimit))
	defer cancel()
	admin, _, err := zk.Connect(servers, maxSession, zk.WithLogger(testenv.NewLogger(t)), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// candidates returns how many candidates election has, and a channel
	// that the next change of its children (or of its existence) fires.
	candidates := func(election string) (int, <-chan zk.Event) {
		if _, err := admin.Sync("/"); err != nil {
			t.Fatal(err)
		}
		dir := testPrefix + "/" + election
		kids, _, changed, err := admin.ChildrenW(dir)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			if ok, _, changed, err = admin.ExistsW(dir); err == nil && ok {
				kids, _, changed, err = admin.ChildrenW(dir)
			}
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		return len(kids), changed
	}
	hb, err := New(servers[holderAt:holderAt+1], &Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	wb, err := New(servers[waiterAt:waiterAt+1], &Options{Prefix: testPrefix})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	election := "leader-pause-" + randomSuffix()

	bl, err := hb.Campaign(ctx, backend.Candidate{Election: election, Identity: "holder", TTL: ttl})
	if err != nil {
		if !errors.Is(err, backend.ErrInvalid) {
			t.Fatalf("Campaign with TTL %v: %v; want a lease, or a refusal wrapping ErrInvalid", ttl, err)
		}
		for _, w := range []string{"TTL " + ttl.String(), "syncLimit " + strconv.Itoa(syncLimit), "tickTime " + tick.String()} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal %q: want it to name %q", err, w)
			}
		}
		safe := MinSafeTTL(tick, syncLimit)
		t.Logf("TTL %v refused: %v; campaigning with %v", ttl, err, safe)
		if safe > maxSession {
			t.Fatalf("the stock ensemble grants session timeouts up to %v, below the %v its timing needs: scripts/servers.sh must start it with ZooKeeper's stock session range", maxSession, safe)
		}
		ttl = safe
		if bl, err = hb.Campaign(ctx, backend.Candidate{Election: election, Identity: "holder", TTL: ttl}); err != nil {
			t.Fatalf("Campaign with TTL %v, the one the refusal named: %v", ttl, err)
		}
	}
	holder := bl.(*lease)
	waiting := make(chan result, 1)
	go func() {
		for {
			l, err := wb.Campaign(ctx, backend.Candidate{Election: election, Identity: "waiter", TTL: ttl})
			if err != nil && ctx.Err() == nil {
				// The waiter's session expired too, or cannot be
				// made while the leader is paused: campaign again.
				continue
			}
			waiting <- result{l, err, time.Now()}
			return
		}
	}()

	for n, changed := candidates(election); n < 2; n, changed = candidates(election) {
		select {
		case r := <-waiting:
			t.Fatalf("the waiter's Campaign returned %v while the holder leads", r.err)
		case <-changed:
		}
	}

	// Renew through the follower, as an Elector would, and keep the
	// latest Deadline the holder was given.
	renewEvery := min(ttl/10, tick/4)
	var deadline time.Time
	renew := func() {
		if err := holder.Renew(ctx); err == nil {
			deadline = holder.Deadline()
		}
	}
	renew()
	t.Cleanup(func() { resumeZK(t, first+leader, servers[leader]) })
	testenv.Fault(t, "pause", "zk", strconv.Itoa(first+leader))
	paused := time.Now()
	t.Logf("leader zk %d paused for %v; TTL %v, holder on zk %d, waiter on zk %d", first+leader, pause, ttl, first+holderAt, first+waiterAt)
	tk := time.NewTicker(renewEvery)
	defer tk.Stop()
	resume := time.NewTimer(pause)
	defer resume.Stop()
	resumed := false
	var releasedAt time.Time // when the holder first released the lease
	var elected result
	for elected.at.IsZero() {
		select {
		case <-resume.C:
			testenv.Fault(t, "resume", "zk", strconv.Itoa(first+leader))
			resumed = true
			t.Logf("leader resumed at +%v; holder's Deadline +%v", time.Since(paused), deadline.Sub(paused))
		case <-tk.C:
			if resumed && time.Since(paused) > pause+2*tick {
				// The resumed leader has counted the follower's
				// report of the holder (or expired it) by now: the
				// holder still leads; hand over.
				if releasedAt.IsZero() {
					releasedAt = time.Now()
				}
				holder.Release(ctx)
			}
			renew()
		case elected = <-waiting:
			if elected.err != nil {
				t.Fatalf("waiter's Campaign: %v", elected.err)
			}
			defer elected.l.Release(ctx)
		}
	}
	gone, _ := holder.state()
	released := !releasedAt.IsZero() && !elected.at.Before(releasedAt)
	t.Logf("waiter elected at +%v; holder's last Deadline +%v, lease gone %v (released before: %v)",
		elected.at.Sub(paused), deadline.Sub(paused), gone, released)
	// Once the holder has released the lease (even one it was told it
	// lost: it has stopped acting), a successor may lead at once.
	if !released && elected.at.Before(deadline) {
		t.Fatalf("the waiter was elected %v before the holder's Deadline: two leaders (TTL %v, leader paused %v, syncLimit × tickTime %d × %v)",
			deadline.Sub(elected.at), ttl, pause, syncLimit, tick)
	}
}
