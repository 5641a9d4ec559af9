package redlock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// name returns an election name unique to this test run.
func name(t *testing.T) string {
	return "redlock-test/" + strings.ReplaceAll(t.Name(), "/", "-") + "/" + newCampaignID()[:8]
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	ok := []redis.UniversalClient{redis.NewClient(clientOptions("127.0.0.1:1"))}
	noCTE := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = ok[0].Close(); _ = noCTE.Close() })
	for _, tc := range []struct {
		name    string
		clients []redis.UniversalClient
		opts    *Options
		want    string
	}{
		{"no clients", nil, nil, "no clients"},
		{"nil client", []redis.UniversalClient{nil}, nil, "clients[0] is nil"},
		{"no ContextTimeoutEnabled", []redis.UniversalClient{noCTE}, nil, "ContextTimeoutEnabled"},
		{"prefix and NoPrefix", ok, &Options{Prefix: "x:", NoPrefix: true}, "NoPrefix"},
		{"RequestTimeout too small", ok, &Options{RequestTimeout: time.Microsecond}, "Options.RequestTimeout is 1µs; want 1ms to 10s"},
		{"RequestTimeout negative", ok, &Options{RequestTimeout: -time.Second}, "RequestTimeout"},
		{"DriftFactor negative", ok, &Options{DriftFactor: -0.1}, "DriftFactor"},
		{"DriftFactor too large", ok, &Options{DriftFactor: 0.6}, "Options.DriftFactor is 0.6; want a fraction in (0, 0.5]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(tc.clients, tc.opts)
			if err == nil {
				_ = b.Close()
				t.Fatalf("New: got nil error, want one mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, backend.ErrInvalid) {
				t.Fatalf("New: got %v, want an error wrapping ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCampaignRejectsInvalid(t *testing.T) {
	t.Parallel()
	b, _ := newBackend(t, nil)
	ctx := testCtx(t)
	for _, c := range []backend.Candidate{
		{Election: "", Identity: "a", TTL: time.Second},
		{Election: "a//b", Identity: "a", TTL: time.Second},
		{Election: "ok", Identity: "", TTL: time.Second},
	} {
		if _, err := b.Campaign(ctx, c); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("Campaign(%+v): got %v, want an error wrapping ErrInvalid", c, err)
		}
	}
	for _, ttl := range []time.Duration{-time.Second, 0, time.Millisecond, MinTTL - time.Nanosecond} {
		c := backend.Candidate{Election: "ok", Identity: "a", TTL: ttl}
		_, err := b.Campaign(ctx, c)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "Candidate.TTL is "+ttl.String()+"; want 10ms or more") {
			t.Errorf("Campaign with TTL %v: got %v, want an error wrapping ErrInvalid that names the range (10ms or more)", ttl, err)
		}
	}
	if _, err := b.Leader(ctx, "a//b"); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("Leader(%q): got %v, want an error wrapping ErrInvalid", "a//b", err)
	}
}

// TestKeysAreRedlockKeys checks the stored layout: a plain string key with
// a PX expiry (so redsync and node-redlock locks exclude ours), named
// exactly as the election with NoPrefix, and a counter that equals the
// token on a quorum.
func TestKeysAreRedlockKeys(t *testing.T) {
	t.Parallel()
	b, n := newBackend(t, &Options{NoPrefix: true, RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice w/ space", TTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Rounds return at a quorum, so a loaded straggler may lag: check
	// the quorum, not every node.
	agree := 0
	for i, c := range n.clients {
		typ, _ := c.Type(ctx, e).Result()
		pttl, _ := c.PTTL(ctx, e).Result()
		v, _ := c.Get(ctx, e).Result()
		pv, ok := parseValue(v)
		ctr, _ := c.Get(ctx, e+counterSuffix).Uint64()
		if typ == "string" && pttl > 0 && pttl <= 5*time.Second && ok && pv.identity == "alice w/ space" && pv.token == l.Token() && ctr == l.Token() {
			agree++
		} else {
			t.Logf("node %d: type %q, PTTL %v, value %q, counter %d", i+1, typ, pttl, v, ctr)
		}
	}
	if agree < b.quorum {
		t.Errorf("got %d nodes with a plain string key with a PX expiry, our value and counter at token %d; want at least %d", agree, l.Token(), b.quorum)
	}
	h, err := b.Leader(ctx, e)
	if err != nil || h.Identity != "alice w/ space" || h.Token != l.Token() || h.TTL <= 0 {
		t.Errorf("Leader: got %+v, %v; want alice with token %d and a positive TTL", h, err, l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, c := range n.clients {
		if x, _ := c.Exists(ctx, e).Result(); x != 0 {
			held++
		}
	}
	if held >= b.quorum {
		t.Errorf("after Release %d nodes still hold %q, want fewer than %d", held, e, b.quorum)
	}
}

// TestForeignLockExcludes: a plain SET NX PX lock on a majority of nodes,
// as redsync or node-redlock would take, keeps our candidates out until it
// expires, and Leader reports it without identity. The candidate's TTL is
// far above the lock's PTTL, so that a Campaign that waited a TTL (the cap
// for a holder whose keys do not expire) instead of the PTTL shows. Not
// t.Parallel: Leader must read the lock, set on three nodes one after the
// other, within its 300 ms PTTL.
func TestForeignLockExcludes(t *testing.T) {
	// Nodes just (re)started would be in the restart delay of a 20 s TTL:
	// the Campaign must wait for the lock only.
	b, n := newBackend(t, &Options{NoPrefix: true, RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	// Timed from before the lock is taken: the lock lapses no sooner than
	// 300ms after that, however long the SETs and Leader take.
	locked := time.Now()
	for _, c := range n.clients[:3] {
		if err := c.SetNX(ctx, e, "Zm9yZWlnbi1yZWRzeW5jLXZhbHVl", 300*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	h, err := b.Leader(ctx, e)
	if err != nil || h.Identity != "" || h.Token != 0 || h.TTL <= 0 {
		t.Errorf("Leader under a foreign lock: got %+v, %v; want an anonymous holder with a TTL", h, err)
	}
	start := time.Now()
	l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if held, waited := time.Since(locked), time.Since(start); held < 250*time.Millisecond || waited > 5*time.Second {
		t.Errorf("Campaign under a foreign 300ms lock returned %v after the lock was taken (%v after it began), want about 300ms: it waits for the PTTL", held, waited)
	}
}

// TestFencingWriteBack: when the nodes' counters disagree, the lease takes
// the maximum over the quorum and writes it back, so Leader agrees on it
// and the next term's token is higher still. The Backend has three nodes,
// one of them cut off, so that the quorum is the two others (with five, a
// round that returns at the first quorum may leave out the node with the
// high counter, and the test would be flaky). Not t.Parallel: the lease,
// on a 2 s TTL that nothing renews, must outlast the reads before Leader.
func TestFencingWriteBack(t *testing.T) {
	addrs := testenv.RedisAddrs(t)
	n, cut := newNodes(t, addrs[:2]), newNodes(t, addrs[2:3])
	cut.isolated.Store(true)
	b, err := New(append(n.clients, cut.clients...), &Options{RequestTimeout: testRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := testCtx(t)
	e := name(t)
	counter := b.lockKey(e) + counterSuffix
	if err := n.clients[1].Set(ctx, counter, 1000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	c := backend.Candidate{Election: e, Identity: "alice", TTL: 2 * time.Second}
	l, err := b.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != 1001 {
		t.Fatalf("token: got %d, want 1001, the maximum over the quorum", l.Token())
	}
	raised := 0
	for _, cl := range n.clients {
		if v, _ := cl.Get(ctx, counter).Uint64(); v >= 1001 {
			raised++
		}
	}
	if raised < b.quorum {
		t.Errorf("counters at >= 1001: got %d nodes, want at least %d: the token is written back to a quorum", raised, b.quorum)
	}
	if h, err := b.Leader(ctx, e); err != nil || h.Token != 1001 {
		t.Errorf("Leader: got %+v, %v; want token 1001", h, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Drop the node that had the high counter: the rest still know 1001.
	if err := n.clients[1].Del(ctx, counter).Err(); err != nil {
		t.Fatal(err)
	}
	l2, err := b.Campaign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	if l2.Token() <= 1001 {
		t.Errorf("next token: got %d, want > 1001: tokens strictly increase", l2.Token())
	}
}

// TestRenewNeverRecreates: a renewal of a lease whose keys were deleted
// fails with ErrLost and creates nothing.
func TestRenewNeverRecreates(t *testing.T) {
	t.Parallel()
	b, n := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Campaign returns at a quorum; let the slower nodes' SETs land first.
	for _, done := range l.(*lease).last {
		<-done
	}
	for _, c := range n.clients {
		c.Del(ctx, b.lockKey(e))
	}
	if err := l.Renew(ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew after deletion: got %v, want ErrLost", err)
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost() is open after Renew returned ErrLost, want closed")
	}
	for i, c := range n.clients {
		if x, _ := c.Exists(ctx, b.lockKey(e)).Result(); x != 0 {
			t.Errorf("node %d: the key was re-created by Renew", i+1)
		}
	}
}

// TestRenewRestoresMissingNodes is the chaos campaign's finding: a holder
// left on a bare quorum (here: its key gone from two nodes, as after
// restarts without persistence) must not be overtaken when one more node
// restarts empty. A renewal that confirms the quorum puts the lease back on
// the nodes that lost it, with their counters raised to its token.
func TestRenewRestoresMissingNodes(t *testing.T) {
	t.Parallel()
	// Parallel, so after the serial tests whose cleanups restart nodes: it
	// restarts none, and a node in its restart delay would not count
	// toward the renewals' quorum of three (nodes 1-3).
	b, n := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	key := b.lockKey(e)
	// A TTL that outlasts the checks and the rival's attempt between the
	// two renewals on a loaded machine.
	l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, done := range l.(*lease).last {
		<-done
	}
	for _, c := range n.clients[3:] { // nodes 4 and 5 restart empty
		c.Del(ctx, key, key+counterSuffix)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew with 3 of 5 nodes: got %v, want nil: a quorum still holds it", err)
	}
	for _, done := range l.(*lease).last { // the restore round runs in the background
		<-done
	}
	for i, c := range n.clients {
		v, err := c.Get(ctx, key).Result()
		if err != nil || !strings.HasPrefix(v, l.(*lease).id) {
			t.Errorf("node %d after Renew: got value %q (%v), want the lease's: Renew restores a confirmed lease where it was missing", i+1, v, err)
		}
		ctr, _ := c.Get(ctx, key+counterSuffix).Uint64()
		if ctr < l.Token() {
			t.Errorf("node %d counter after Renew: got %d, want at least the token %d", i+1, ctr, l.Token())
		}
	}
	n.clients[0].Del(ctx, key, key+counterSuffix) // one more node restarts empty
	rival, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if l2, err := rival.Campaign(cctx, backend.Candidate{Election: e, Identity: "bob", TTL: 2 * time.Second}); err == nil {
		t.Fatalf("rival Campaign: got lease token %d while alice holds 4 of 5 nodes, want none: one leader at a time", l2.Token())
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("Renew with 4 of 5 nodes: got %v, want nil", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAuth runs a Backend on the password-protected node, through a client
// configured with the password, and checks that without it nothing works.
// Not t.Parallel: the Campaign without credentials runs on the default
// RequestTimeout, 100 ms, and must have the NOAUTH reply within it.
func TestAuth(t *testing.T) {
	addr := testenv.RedisAuthAddr(t)
	ctx := testCtx(t)
	for _, opts := range []*redis.Options{
		{Addr: addr, Password: testenv.RedisPassword, ContextTimeoutEnabled: true},
		{Addr: addr, Username: testenv.RedisACLUser, Password: testenv.RedisACLPassword, ContextTimeoutEnabled: true},
	} {
		c := redis.NewClient(opts)
		t.Cleanup(func() { _ = c.Close() })
		b, err := New([]redis.UniversalClient{c}, &Options{RequestTimeout: testRequestTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		e := name(t) + "-" + opts.Username
		l, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 10 * time.Second})
		if err != nil {
			t.Fatalf("Campaign as %q: %v", opts.Username, err)
		}
		if err := l.Renew(ctx); err != nil {
			t.Errorf("Renew as %q: %v", opts.Username, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release as %q: %v", opts.Username, err)
		}
	}
	anon := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = anon.Close() })
	b, err := New([]redis.UniversalClient{anon}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	_, err = b.Campaign(ctx, backend.Candidate{Election: name(t), Identity: "alice", TTL: time.Second})
	if err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("Campaign without credentials: got %v, want a NOAUTH error", err)
	}
}

// TestFence: writes with the newest token pass, stale ones are refused and
// change nothing.
func TestFence(t *testing.T) {
	t.Parallel()
	_, n := newBackend(t, nil)
	ctx := testCtx(t)
	e := name(t)
	g := NewFence(n.clients[0], e+"/fence")
	big := uint64(1) << 60 // beyond Lua's exact doubles
	for _, step := range []struct {
		token uint64
		value string
		stale bool
	}{
		{5, "five", false}, {5, "five again", false}, {4, "four", true}, {big, "big", false}, {big - 1, "big-1", true},
	} {
		err := g.Set(ctx, step.token, e+"/data", step.value, time.Minute)
		if step.stale != errors.Is(err, ErrStaleToken) || (!step.stale && err != nil) {
			t.Fatalf("Set(token %d): got %v, want stale=%v", step.token, err, step.stale)
		}
	}
	if v, _ := n.clients[0].Get(ctx, e+"/data").Result(); v != "big" {
		t.Errorf("data: got %q, want %q: stale writes change nothing", v, "big")
	}
	if v, _ := n.clients[0].Get(ctx, e+"/fence").Result(); v != strconv.FormatUint(big, 10) {
		t.Errorf("fence: got %q, want %d", v, big)
	}
	if err := g.Check(ctx, 3); !errors.Is(err, ErrStaleToken) {
		t.Errorf("Check(3): got %v, want ErrStaleToken", err)
	}
}

// TestPausedLeaderFenced: a leader that stops renewing (a process pause)
// past its TTL is replaced, and its late writes through the Fence are
// refused.
func TestPausedLeaderFenced(t *testing.T) {
	t.Parallel()
	a, n := newBackend(t, &Options{RestartDelay: time.Millisecond})
	b, _ := newBackend(t, &Options{RestartDelay: time.Millisecond})
	ctx := testCtx(t)
	e := name(t)
	g := NewFence(n.clients[0], b.lockKey(e)+"/fence")
	// Her TTL is what bob waits out; it leaves her acquire round 2 s,
	// which a loaded machine may take.
	la, err := a.Campaign(ctx, backend.Candidate{Election: e, Identity: "alice", TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, la.Token(), e+"/data", "alice", 0); err != nil {
		t.Fatal(err)
	}
	// alice "pauses": no renewals. bob is elected after her TTL.
	lb, err := b.Campaign(ctx, backend.Candidate{Election: e, Identity: "bob", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	if time.Now().Before(la.Deadline()) {
		t.Fatalf("bob elected %v before alice's deadline", time.Until(la.Deadline()))
	}
	if err := g.Set(ctx, lb.Token(), e+"/data", "bob", 0); err != nil {
		t.Fatal(err)
	}
	// alice wakes and writes as if still leader.
	if err := g.Set(ctx, la.Token(), e+"/data", "alice late", 0); !errors.Is(err, ErrStaleToken) {
		t.Fatalf("paused leader's write: got %v, want ErrStaleToken", err)
	}
	if err := la.Renew(ctx); !errors.Is(err, backend.ErrLost) {
		t.Errorf("paused leader's Renew: got %v, want ErrLost", err)
	}
	if v, _ := n.clients[0].Get(ctx, e+"/data").Result(); v != "bob" {
		t.Errorf("data: got %q, want %q", v, "bob")
	}
}

// TestAcquireFollowsOwnRelease: Release returns once no quorum can hold the
// lease, with some deletions still in flight; the Backend's next acquire of
// the election never overtakes them: it leaves out the nodes still busy with
// them (a quorum is free) or waits for them, node by node. So every node
// holds the new lease or, left out, no key at all once its earlier request
// is done; and as the counters of the nodes left out catch up at their next
// round (the floor), no fencing write-back is needed: each term's token is
// the previous one plus one.
func TestAcquireFollowsOwnRelease(t *testing.T) {
	t.Parallel()
	// Parallel, so after the serial tests whose cleanups restart nodes: it
	// restarts none, and a node in its restart delay would get the counter
	// write-backs this test counts (raiseCounters).
	b, n := newBackend(t, &Options{RestartDelay: time.Millisecond})
	writeBacks := &hashCounter{hash: writeBackScript.Hash()}
	for _, cl := range n.clients {
		cl.AddHook(writeBacks)
	}
	ctx := testCtx(t)
	e := name(t)
	// Each round's key must still be there when the test reads it back.
	c := backend.Candidate{Election: e, Identity: "alice", TTL: 10 * time.Second}
	var prev uint64
	skips := 0
	for i := range 100 {
		l, err := b.Campaign(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ll := l.(*lease)
		if prev != 0 && l.Token() != prev+1 {
			t.Errorf("round %d: token %d after %d, want %d: a write-back or a lost round", i, l.Token(), prev, prev+1)
		}
		prev = l.Token()
		for _, done := range ll.last {
			<-done
		}
		held := 0
		for j, cl := range n.clients {
			v, err := cl.Get(ctx, b.lockKey(e)).Result()
			switch {
			case ll.skipped != nil && ll.skipped[j]:
				skips++
				if err != redis.Nil {
					t.Errorf("round %d, node %d (left out): got value %q (%v), want no key: an earlier lease's key outlived its release", i, j+1, v, err)
				}
			case err != nil || !strings.HasPrefix(v, ll.id):
				t.Errorf("round %d, node %d: got value %q (%v), want the new lease's: the acquire overtook the previous release", i, j+1, v, err)
			default:
				held++
			}
		}
		if held < b.quorum {
			t.Errorf("round %d: the new lease is on %d nodes, want at least %d", i, held, b.quorum)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("nodes left out: %d in 100 rounds", skips)
	if k := writeBacks.n.Load(); k != 0 {
		t.Errorf("%d fencing write-backs (or counter raises) in 100 rounds, want 0: the counters disagreed", k)
	}
}

// hashCounter is a go-redis hook that counts the EVALSHA calls of one
// script (by its hash) that a client sends.
type hashCounter struct {
	hash string
	n    atomic.Int64
}

func (h *hashCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *hashCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && args[0] == "evalsha" && args[1] == h.hash {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *hashCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
