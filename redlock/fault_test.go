package redlock

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// Fault tests break the shared Redis nodes with scripts/servers.sh and
// restore them in t.Cleanup. They are not t.Parallel, so they run before
// every parallel test of the package, none of which faults a node (see
// main_test.go).

// kill SIGKILLs Redis node i (1-based) and restarts it, empty, at cleanup.
func kill(t *testing.T, i int) {
	t.Cleanup(func() { testenv.Fault(t, "restart", "redis", strconv.Itoa(i)) })
	testenv.Fault(t, "kill", "redis", strconv.Itoa(i))
}

// pause SIGSTOPs Redis node i and resumes it at cleanup. It checks that
// the process is stopped: servers.sh signals nothing, silently, when it
// cannot match the node's PID file to a running process.
func pause(t *testing.T, i int) {
	t.Cleanup(func() { testenv.Fault(t, "resume", "redis", strconv.Itoa(i)) })
	testenv.Fault(t, "pause", "redis", strconv.Itoa(i))
	pid := testenv.Fault(t, "pid", "redis", strconv.Itoa(i))
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatalf("pause redis %d: %v", i, err)
	}
	// The state follows the parenthesised command name.
	if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) == 0 || f[0] != "T" {
		t.Fatalf("pause redis %d: process %s is in state %v, want T (stopped)", i, pid, f[:1])
	}
}

// restart restarts Redis node i: empty, or keeping its data with aof.
func restart(t *testing.T, i int, aof bool) {
	args := []string{"restart", "redis", strconv.Itoa(i)}
	if aof {
		args = append(args, "--aof")
	}
	testenv.Fault(t, args...)
}

// wantWaits asserts that c cannot win e within d.
func wantWaits(t *testing.T, b *Backend, c backend.Candidate, d time.Duration, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), d)
	defer cancel()
	l, err := b.Campaign(ctx, c)
	if err == nil {
		_ = l.Release(testCtx(t))
		t.Fatalf("Campaign(%q): got a lease, want none: %s", c.Identity, why)
	}
	if err != context.DeadlineExceeded {
		t.Fatalf("Campaign(%q): got %v, want context.DeadlineExceeded: %s", c.Identity, err, why)
	}
}

func TestOneNodeKilled(t *testing.T) {
	// The nodes an earlier test restarted need not be waited out: this
	// test restarts none (its kill's restart comes at cleanup).
	a, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	b, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	kill(t, 3)
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 20 * time.Second})
	if err != nil {
		t.Fatalf("Campaign with one node down: %v, want a lease: 4 of 5 is a quorum", err)
	}
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("Renew with one node down: %v", err)
	}
	bob := backend.Candidate{Election: e, Identity: "bob", TTL: 20 * time.Second}
	wantWaits(t, b, bob, 300*time.Millisecond, "alice holds a quorum")
	done := make(chan error, 1)
	var lb backend.Lease
	go func() {
		var err error
		lb, err = b.Campaign(ctx, bob)
		done <- err
	}()
	released := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(released); took > 5*time.Second {
		t.Errorf("hand-over with one node down took %v, want well under the 20s TTL", took)
	}
	if lb.Token() <= la.Token() {
		t.Errorf("bob's token %d, want > alice's %d", lb.Token(), la.Token())
	}
	_ = lb.Release(ctx)
}

// TestPausedNodesBounded proves that RequestTimeout, and a renewal's
// Deadline, bound the socket I/O: a SIGSTOPped node accepts connections but
// never answers, and go-redis would wait out its ReadTimeout (30 s on these
// clients) for a request whose context had no deadline.
func TestPausedNodesBounded(t *testing.T) {
	const requestTimeout = 200 * time.Millisecond
	const readTimeout = 30 * time.Second
	const slack = 5 * time.Second // for a loaded machine; far below readTimeout
	const bound = requestTimeout + slack
	n := newNodesWith(t, testenv.RedisAddrs(t), func(o *redis.Options) { o.ReadTimeout = readTimeout })
	// The nodes an earlier test restarted need not be waited out (this
	// test restarts none): after a restart of nodes 1-3, the Campaign below
	// would wait out a restart delay of its 15 s TTL, past its bound.
	a, err := New(n.clients, &Options{RequestTimeout: requestTimeout, RestartDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	ctx := testCtx(t)
	e := name(t)
	// A TTL that outlasts pausing two more nodes on a loaded machine (four
	// servers.sh runs, which took over 5 s there), so that the second Renew
	// starts before the lease's Deadline.
	c := backend.Candidate{Election: e, Identity: "alice", TTL: 15 * time.Second}

	pause(t, 5)
	timedTo := func(bound time.Duration, what string, f func() error) error {
		t.Helper()
		start := time.Now()
		err := f()
		took := time.Since(start)
		t.Logf("%s: %v (%v)", what, took, err)
		if took > bound {
			t.Errorf("%s with paused nodes took %v, want at most %v (RequestTimeout %v)", what, took, bound, requestTimeout)
		}
		return err
	}
	timed := func(what string, f func() error) error {
		t.Helper()
		return timedTo(bound, what, f)
	}
	var l backend.Lease
	if err := timed("Campaign", func() (err error) { l, err = a.Campaign(ctx, c); return err }); err != nil {
		t.Fatalf("Campaign with one node paused: %v", err)
	}
	if err := timed("Renew", func() error { return l.Renew(ctx) }); err != nil {
		t.Fatalf("Renew with one node paused: %v", err)
	}

	// Two more paused: no quorum answers, every round ends at RequestTimeout,
	// except the renewal, which waits until the lease's Deadline (under the
	// 30 s ReadTimeout), when no reply could renew the lease any more.
	pause(t, 4)
	pause(t, 3)
	deadline := l.Deadline()
	if err := timedTo(time.Until(deadline)+slack, "Renew", func() error { return l.Renew(ctx) }); err == nil || errors.Is(err, backend.ErrLost) {
		t.Errorf("Renew with three nodes paused: got %v, want a transient error (the outcome is unknown)", err)
	}
	if l.Deadline() != deadline {
		t.Errorf("Deadline moved after a failed Renew")
	}
	if err := timed("Leader", func() error { _, err := a.Leader(ctx, e); return err }); err == nil || errors.Is(err, backend.ErrNoLeader) {
		t.Errorf("Leader with three nodes paused: got %v, want an error saying too few nodes answered", err)
	}
	c2 := backend.Candidate{Election: name(t) + "-2", Identity: "bob", TTL: 2 * time.Second}
	if err := timed("Campaign", func() error { _, err := a.Campaign(ctx, c2); return err }); err == nil {
		t.Errorf("Campaign with three nodes paused: got a lease, want an error")
	}
	if err := timed("Release", func() error { return l.Release(ctx) }); err == nil {
		t.Errorf("Release with three nodes paused: got nil, want an error: three nodes may still hold it")
	}
}

// TestRestartWithoutPersistence documents what the package doc's # Safety
// section states. One node restarted empty during a term changes nothing:
// the holder keeps a quorum of four, and its next renewal puts the lease
// back on the restarted node. A majority restarted empty at once stays out
// of every quorum for the restart delay (a TTL), so the second candidate
// is elected only after the first one's lease has expired; but the
// restarted nodes' counters started over, so its token may go backwards,
// and the Fence then refuses it.
//
// Alice's Campaign, with the default restart delay, waits until a majority
// of the nodes has been up for her 15 s TTL: the test comes before
// TestThreeNodesDown, whose cleanup restarts nodes 1-3, so that it does
// not wait those restarts out (OneNodeKilled's restart of node 3 alone
// leaves a majority up).
func TestRestartWithoutPersistence(t *testing.T) {
	a, n := newBackend(t, nil)
	b, _ := newBackend(t, nil)
	ctx := testCtx(t)
	e := name(t)
	for _, c := range n.clients {
		if err := c.Set(ctx, a.lockKey(e)+counterSuffix, 100, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g := NewFence(n.clients[4], a.lockKey(e)+"/fence")
	if err := g.Check(ctx, la.Token()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.Fault(t, "restart", "redis", "1") })
	restart(t, 1, false)
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("Renew after one empty restart: %v, want nil: four nodes still hold the lease", err)
	}
	for _, done := range la.(*lease).last { // the background restore round
		<-done
	}
	if v, err := n.clients[0].Get(ctx, a.lockKey(e)).Result(); err != nil || !strings.HasPrefix(v, la.(*lease).id) {
		t.Errorf("restarted node after Renew: got %q (%v), want alice's lease put back", v, err)
	}
	bob := backend.Candidate{Election: e, Identity: "bob", TTL: 15 * time.Second}
	wantWaits(t, b, bob, 300*time.Millisecond, "one empty restart does not break exclusion")

	t.Cleanup(func() { testenv.Fault(t, "restart", "redis", "2") })
	t.Cleanup(func() { testenv.Fault(t, "restart", "redis", "3") })
	restart(t, 1, false)
	restart(t, 2, false)
	restart(t, 3, false)
	if err := la.Renew(ctx); err == nil {
		t.Errorf("alice's Renew after the majority restart: got nil, want an error: only two nodes count")
	}
	lb, err := b.Campaign(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if time.Now().Before(la.Deadline()) {
		t.Errorf("bob elected %v before alice's deadline: the restarted majority counted before its restart delay", time.Until(la.Deadline()))
	}
	t.Logf("bob's token %d, alice's %d", lb.Token(), la.Token())
	if err := g.Check(ctx, lb.Token()); lb.Token() < la.Token() && !errors.Is(err, ErrStaleToken) {
		t.Errorf("Fence with bob's lower token: got %v, want ErrStaleToken", err)
	}
}

// TestThreeNodesDown: with a majority of nodes down nobody is elected, the
// holder cannot renew, and no second leader appears.
func TestThreeNodesDown(t *testing.T) {
	// The nodes TestRestartWithoutPersistence restarted at its cleanup
	// need not be waited out: with three nodes down no quorum answers
	// whatever the restart delay.
	a, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	b, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	// A TTL that outlasts killing three nodes on a busy machine (three
	// servers.sh runs took over 5 s in a loaded CI run), so that the Renew
	// below runs before the lease's Deadline.
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	kill(t, 1)
	kill(t, 2)
	kill(t, 3)
	if err := la.Renew(ctx); err == nil || errors.Is(err, backend.ErrLost) {
		t.Errorf("Renew with three nodes down: got %v, want a transient error", err)
	}
	// Past alice's TTL, bob still cannot be elected: a quorum is unreachable.
	tick := time.NewTicker(20 * time.Millisecond) // paces the attempts
	defer tick.Stop()
	for ; time.Now().Before(la.Deadline().Add(100 * time.Millisecond)); <-tick.C {
		l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "bob", TTL: 500 * time.Millisecond})
		if err == nil {
			_ = l.Release(ctx)
			t.Fatal("Campaign with three nodes down: got a lease, want an error")
		}
		if errors.Is(err, backend.ErrInvalid) || errors.Is(err, backend.ErrClosed) {
			t.Fatalf("Campaign with three nodes down: got permanent error %v, want a transient one", err)
		}
	}
	if h, err := b.Leader(ctx, e); err == nil {
		t.Errorf("Leader with three nodes down: got %+v, want an error", h)
	}
}

// TestRestartWithAOF: nodes running with appendfsync always keep the lock
// and the counter across a crash, so exclusion and tokens survive a
// majority of restarts, with Options.NoRestartDelay.
func TestRestartWithAOF(t *testing.T) {
	for i := 1; i <= 3; i++ {
		t.Cleanup(func() { testenv.Fault(t, "restart", "redis", strconv.Itoa(i)) })
		restart(t, i, true)
	}
	// With appendfsync always a restarted node lost nothing: no restart
	// delay is needed.
	a, _ := newBackend(t, &Options{NoRestartDelay: true})
	b, _ := newBackend(t, &Options{NoRestartDelay: true})
	ctx := testCtx(t)
	e := name(t)
	// A TTL that outlasts three kills and restarts on a loaded machine, so
	// that the Renew below runs before the lease's Deadline.
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		testenv.Fault(t, "kill", "redis", strconv.Itoa(i))
		restart(t, i, true)
	}
	bob := backend.Candidate{Election: e, Identity: "bob", TTL: 30 * time.Second}
	wantWaits(t, b, bob, 300*time.Millisecond, "AOF kept alice's keys on the restarted majority")
	if err := la.Renew(ctx); err != nil {
		t.Fatalf("Renew after AOF restarts: %v", err)
	}
	done := make(chan error, 1)
	var lb backend.Lease
	go func() {
		var err error
		lb, err = b.Campaign(ctx, bob)
		done <- err
	}()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if lb.Token() <= la.Token() {
		t.Errorf("bob's token %d, want > alice's %d: AOF kept the counters", lb.Token(), la.Token())
	}
}

// TestRenewOutwaitsSlowMajority: a renewal whose quorum replies later than
// RequestTimeout, but before the lease's Deadline, renews the lease, as a
// starved client or a node stalled for a moment would have it: its
// validity counts from its send time, so the late reply still proves it.
func TestRenewOutwaitsSlowMajority(t *testing.T) {
	// The nodes an earlier test restarted need not be waited out: this
	// test restarts none.
	a, _ := newBackend(t, &Options{RequestTimeout: 100 * time.Millisecond, RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	// A TTL that outlasts pausing three nodes (six servers.sh runs, which
	// took 10 s on a loaded machine) and resuming one.
	l, err := a.Campaign(ctx, backend.Candidate{Election: name(t), Identity: "alice", TTL: 30 * time.Second})
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	for i := 1; i <= 3; i++ {
		pause(t, i)
	}
	// The nodes come back 600 ms after the renewal below was sent: six
	// RequestTimeouts late, and well before the Deadline.
	resumed := make(chan struct{})
	time.AfterFunc(600*time.Millisecond, func() {
		defer close(resumed)
		for i := 1; i <= 3; i++ {
			testenv.Fault(t, "resume", "redis", strconv.Itoa(i))
		}
	})
	t.Cleanup(func() { <-resumed })
	before := l.Deadline()
	start := time.Now()
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew with a majority stalled for 600 ms: %v, want the late quorum to renew the lease", err)
	}
	if d := l.Deadline(); !d.After(before) || d.Before(start.Add(29*time.Second)) {
		t.Fatalf("Deadline after the renewal sent at %v: %v (was %v), want it counted from the send time", start, d, before)
	}
}

// TestCloseEndsRenewalToStalledNodes: a batched renewal waits for a stalled
// majority as long as the lease has time left, but Close does not wait
// that long.
func TestCloseEndsRenewalToStalledNodes(t *testing.T) {
	// The nodes an earlier test restarted need not be waited out: this
	// test restarts none.
	a, _ := newBackend(t, &Options{RequestTimeout: 100 * time.Millisecond, RestartDelay: time.Millisecond})
	if a.batch == nil {
		t.Fatal("the test nodes are single Redis servers: want a batching Backend")
	}
	ctx := testCtx(t)
	l, err := a.Campaign(ctx, backend.Candidate{Election: name(t), Identity: "alice", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	for i := 1; i <= 3; i++ {
		pause(t, i)
	}
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := l.Renew(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Renew with a majority stalled: %v, want the caller's context to end it", err)
	}
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The renewal's requests may wait up to the Deadline, most of a
	// minute away (less the pauses, which take seconds on a loaded
	// machine); Close ends that wait, though not a read go-redis has
	// already begun, which its own timeouts end within about 5 s.
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("Close took %v: it waited for the renewal to the stalled nodes", took)
	}
}
