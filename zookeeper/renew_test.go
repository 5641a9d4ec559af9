package zookeeper

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
)

// The leases of one session share its liveness: renewing many of them,
// round after round, reads no znode per lease (the session's pings, or one
// shared read, prove it alive; each znode's watch proves it still there),
// and a znode deleted behind a lease's back still ends that lease.
func TestRenewSharesSession(t *testing.T) {
	t.Parallel()
	f, leases, d := renewFixture(t, "shared")
	n := len(leases)
	before, began := d.exists.Load(), time.Now()
	everyInterval(func() {
		var wg sync.WaitGroup
		begin := make(chan struct{}) // the renewals of a round begin together, as aligned Electors' do
		for _, l := range leases {
			wg.Go(func() {
				<-begin
				if err := l.Renew(f.ctx); err != nil {
					t.Errorf("Renew: %v", err)
				}
			})
		}
		close(begin)
		wg.Wait()
	})
	// A round costs about two reads: one in flight when the round's last
	// Renew begins, and the one that Renew then waits for (a Renew that
	// the scheduler delays past the second one's send costs a third, and
	// a lease whose watch the dispatcher has not armed again yet reads its
	// znode). Between rounds the quiet session sends a read of its own at
	// each tick of a ticker TTL/probeDivisor apart (dispatch.go), however
	// many leases it holds, and one ticked before the rounds may be sent
	// after they began. Each lease reading its own znode would cost n per
	// round: a loaded host is allowed a third of that.
	got := d.exists.Load() - before
	want := int64(rounds*n/3) + int64(time.Since(began)/(testTTL/probeDivisor)) + 2
	t.Logf("%d rounds of renewing %d leases sent %d reads (at most %d)", rounds, n, got, want)
	if got > want {
		t.Errorf("%d rounds of renewing %d leases sent %d reads; want at most %d: the session's liveness renews every lease", rounds, n, got, want)
	}
	// A stall of the host leaves the Deadline trailing until the session's
	// next answers are confirmed; one that stopped moving never gets ahead.
	for _, l := range leases {
		eventually(t, 10*time.Second, func() bool { return time.Until(l.Deadline()) >= testTTL/3 },
			"the Deadline of a renewed lease is at least TTL/3 ahead")
	}

	victim := leases[0]
	if err := f.admin.Delete(victim.path, -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-victim.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("znode deleted behind the lease's back: Lost not closed within 10s")
	}
	if err := victim.Renew(f.ctx); !errors.Is(err, backend.ErrLost) {
		t.Errorf("Renew after the znode's deletion: got %v, want ErrLost", err)
	}
	if err := leases[1].Renew(f.ctx); err != nil {
		t.Errorf("Renew of another lease of the session: got %v, want nil", err)
	}
}

// Renewals of one session run one after another, as the Elector's renewal
// workers run them, still share one read when each is told the instant
// its round began (RenewSince): a request sent after that instant proves
// them all. Each Renew beginning after the previous one's answer would
// cost a read each.
func TestRenewSinceSharesSequentialRenewals(t *testing.T) {
	t.Parallel()
	f, leases, d := renewFixture(t, "since")
	n := len(leases)
	before, began := d.exists.Load(), time.Now()
	everyInterval(func() {
		since := time.Now()
		for _, l := range leases {
			if err := l.RenewSince(f.ctx, since); err != nil {
				t.Errorf("RenewSince: %v", err)
			}
		}
	})
	// A round costs one read, or none when a ping or the session's own
	// read was sent after the round began and answered (a lease whose
	// watch the dispatcher has not armed again yet reads its znode);
	// between rounds the quiet session sends a read of its own at each tick
	// of a ticker TTL/probeDivisor apart, and one ticked before the rounds
	// may be sent after they began. Each renewal beginning after the
	// previous one's answer would cost n per round: a loaded host is
	// allowed a third of that.
	got := d.exists.Load() - before
	want := int64(rounds*n/3) + int64(time.Since(began)/(testTTL/probeDivisor)) + 2
	t.Logf("%d rounds of renewing %d leases one after another sent %d reads (at most %d)", rounds, n, got, want)
	if got > want {
		t.Errorf("%d rounds of renewing %d leases one after another sent %d reads; want at most %d: renewals since one instant share a read", rounds, n, got, want)
	}
}

// rounds is how many renew intervals the renewal tests run.
const rounds = 3

// renewFixture returns a fixture, 30 leases alice holds through one
// Backend on elections named after prefix, and the Backend's request
// counters.
func renewFixture(t *testing.T, prefix string) (*fixture, []*lease, *faultDialer) {
	f := newFixture(t)
	b, d := f.backend(nil)
	base := prefix + "-" + randomSuffix()
	leases := make([]*lease, 30)
	for i := range leases {
		leases[i] = f.acquire(b, fmt.Sprintf("%s-%d", base, i), "alice")
	}
	return f, leases, d
}

// everyInterval runs round once per renew interval of an Elector (TTL/3),
// rounds times: the pace at which the renewals under test come, not a wait
// for anything.
func everyInterval(round func()) {
	tick := time.NewTicker(testTTL / 3)
	defer tick.Stop()
	for range rounds {
		<-tick.C
		round()
	}
}
