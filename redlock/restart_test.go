package redlock

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// bareQuorum makes alice win e on nodes 1-3 only: nodes 4 and 5 still hold
// a predecessor's key (its deletion in flight), which is then deleted. The
// counters start at 100 on every node. It returns alice's lease.
func bareQuorum(t *testing.T, a *Backend, n *nodes, e string, ttl time.Duration) backend.Lease {
	t.Helper()
	ctx := testCtx(t)
	key := a.lockKey(e)
	for _, c := range n.clients {
		if err := c.Set(ctx, key+counterSuffix, 100, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range n.clients[3:] {
		if err := c.Set(ctx, key, "predecessor 100 old", 3*ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.clients[3:] {
		if v, err := c.Get(ctx, key).Result(); err != nil || v != "predecessor 100 old" {
			t.Fatalf("node 4 or 5 after alice's win: %q, %v; want the predecessor's key (alice on a bare quorum)", v, err)
		}
		if err := c.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return la
}

// TestMinorityRestartAfterHandOver: a holder elected on a bare quorum,
// right after a hand-over, and two of those three nodes restarting empty
// before its first renewal. The restarted nodes are left out of every quorum for a TTL after
// their start, so bob waits (Campaign does not fail) while alice's lease
// may still be held; and the counters raised after alice's win keep her
// token on nodes 4 and 5, so that the next winner's token is higher.
func TestMinorityRestartAfterHandOver(t *testing.T) {
	const ttl = 20 * time.Second // restarts take seconds on a loaded host
	// A new connection to a restarted node costs a dial, INFO and a script
	// load: give a loaded host time for them.
	// Alice need not wait out the restarts of earlier tests.
	a, n := newBackend(t, &Options{RequestTimeout: time.Second, RestartDelay: time.Millisecond})
	b, _ := newBackend(t, &Options{RequestTimeout: time.Second})
	e := name(t)
	la := bareQuorum(t, a, n, e, ttl)
	for i := 1; i <= 2; i++ {
		t.Cleanup(func() { testenv.Fault(t, "restart", "redis", strconv.Itoa(i)) })
		restart(t, i, false)
	}
	const tries = time.Second
	if left := time.Until(la.Deadline()); left < 2*tries {
		t.Fatalf("the restarts took so long that alice's lease has %v left; want %v", left, 2*tries)
	}
	wantWaits(t, b, backend.Candidate{Election: e, Identity: "bob", TTL: ttl}, tries,
		"alice won on nodes 1-3 and nodes 1 and 2 restarted empty: they must not count for a TTL")
	ctx := testCtx(t)
	for _, c := range n.clients[3:] {
		if v, err := c.Get(ctx, a.lockKey(e)+counterSuffix).Uint64(); err != nil || v < la.Token() {
			t.Errorf("counter on node 4 or 5 after alice's win: %d, %v; want at least her token %d", v, err, la.Token())
		}
	}
}

// TestRestartDelayOff: with NoRestartDelay a restarted node counts at once,
// the behaviour before the restart delay, which lets bob in beside alice.
// It shows that TestMinorityRestartAfterHandOver tests what the delay
// changes.
func TestRestartDelayOff(t *testing.T) {
	const ttl = 20 * time.Second
	a, n := newBackend(t, &Options{NoRestartDelay: true, RequestTimeout: time.Second})
	b, _ := newBackend(t, &Options{NoRestartDelay: true, RequestTimeout: time.Second})
	e := name(t)
	la := bareQuorum(t, a, n, e, ttl)
	for i := 1; i <= 2; i++ {
		t.Cleanup(func() { testenv.Fault(t, "restart", "redis", strconv.Itoa(i)) })
		restart(t, i, false)
	}
	lb, err := b.Campaign(testCtx(t), backend.Candidate{Election: e, Identity: "bob", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(testCtx(t))
	if !time.Now().Before(la.Deadline()) {
		t.Errorf("bob elected after alice's deadline; want the overlap the restart delay prevents")
	}
}

// TestCheckWhileDialling: a node whose pool dials a connection during every
// INFO of the restart check (as a pool growing under a burst of requests
// does) still counts: the check covers the connections dialled before its
// last INFO, a reply over a later one is checked after it, and a campaign
// on healthy nodes wins rather than finding its quorum unreachable.
func TestCheckWhileDialling(t *testing.T) {
	t.Parallel()
	b, n := newBackend(t, &Options{RequestTimeout: time.Second, RestartDelay: time.Millisecond})
	for i, cl := range n.clients {
		cl.AddHook(dialDuringInfo{&b.restarts.nodes[i].dialled})
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
	defer cancel()
	l, err := b.Campaign(ctx, backend.Candidate{Election: name(t), Identity: "alice", TTL: 2 * time.Second})
	if err != nil {
		t.Fatalf("Campaign with a dial during every restart check: %v; want the lease", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Errorf("Renew with a dial during every restart check: %v; want nil", err)
	}
	_ = l.Release(ctx)
}

// dialDuringInfo counts a dial into n while each INFO is under way.
type dialDuringInfo struct{ n *atomic.Uint64 }

func (dialDuringInfo) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h dialDuringInfo) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "info" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (dialDuringInfo) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func TestParseServerInfo(t *testing.T) {
	t.Parallel()
	id, up, err := parseServerInfo("# Server\r\nredis_version:7.0.15\r\nrun_id:abc123\r\nuptime_in_seconds:42\r\n")
	if err != nil || id != "abc123" || up != 42*time.Second {
		t.Errorf("parseServerInfo: %q %v %v, want abc123 42s nil", id, up, err)
	}
	if _, _, err := parseServerInfo("# Server\r\n"); err == nil {
		t.Error("parseServerInfo without run_id: got nil error")
	}
}

func TestRestartDelayOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{RestartDelay: -time.Second}, {RestartDelay: 2 * time.Hour}, {NoRestartDelay: true, RestartDelay: time.Second}} {
		if _, err := o.config(); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", o, err)
		}
	}
}

// TestServerStart: Redis reports uptime_in_seconds as its clock's second
// now minus its second at start, so a server 54 ms old reads 1 s when a
// second turned in between (seen on Redis 7.0); the start the restart
// check records must not be taken earlier than the server's real start, or
// the node would count toward quorums before its restart delay has passed
// (TestRestartWithoutPersistence saw a second leader elected 89 ms before
// the first one's deadline).
func TestServerStart(t *testing.T) {
	for _, start := range []time.Duration{0, 500 * time.Millisecond, 950 * time.Millisecond, 999 * time.Millisecond} {
		for _, up := range []time.Duration{0, 54 * time.Millisecond, 500 * time.Millisecond, time.Second, 5300 * time.Millisecond} {
			for _, rtt := range []time.Duration{0, 40 * time.Millisecond} {
				base := 100 * time.Second // the wall clock's second at 0
				now := base + start + up
				reported := now.Truncate(time.Second) - (base + start).Truncate(time.Second)
				answered := int64(now + rtt)
				if got := serverStart(answered, reported); got < int64(base+start) {
					t.Errorf("started at %v, up %v, uptime_in_seconds %v, reply after %v: start reckoned %v, earlier than the real one",
						base+start, up, reported, rtt, time.Duration(got))
				}
			}
		}
	}
}
