package redlock

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
)

// scriptCounter counts the renewal script calls (EVALSHA of the renew and
// batched renew scripts, which holdMany loads) a client sends, as they start; other
// scripts, such as the counter write-back after an acquire, may still be
// in flight in the background and are not counted.
type scriptCounter struct {
	mu   sync.Mutex
	n    int64
	bump chan struct{} // closed and replaced at each call
}

func newScriptCounter() *scriptCounter { return &scriptCounter{bump: make(chan struct{})} }

func (h *scriptCounter) load() (int64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.bump
}

func (h *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isRenewal(cmd) {
			h.mu.Lock()
			h.n++
			close(h.bump)
			h.bump = make(chan struct{})
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// isRenewal reports whether cmd runs one of the renewal scripts.
func isRenewal(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	return cmd.Name() == "evalsha" && (args[1] == renewBatchScript.Hash() || args[1] == renewScript.Hash())
}

func (h *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// holdMany returns a Backend whose clients count their script calls, and k
// leases it holds on distinct elections with ttl. Nodes that just
// (re)started count at once: the tests restart none, and their TTLs would
// otherwise hold their campaigns in the restart delay.
func holdMany(t *testing.T, k int, ttl time.Duration) (*Backend, []*scriptCounter, []*lease) {
	t.Helper()
	b, n := newBackend(t, &Options{RequestTimeout: time.Second, RestartDelay: time.Millisecond})
	counters := make([]*scriptCounter, len(n.clients))
	for i, c := range n.clients {
		counters[i] = newScriptCounter()
		c.AddHook(counters[i])
	}
	ctx := testCtx(t)
	for _, c := range n.clients { // so that each batch is one EVALSHA
		if err := renewBatchScript.Load(ctx, c).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
	}
	base := name(t)
	leases := make([]*lease, k)
	for i := range leases {
		l, err := b.Campaign(ctx, backend.Candidate{Election: fmt.Sprintf("%s/%d", base, i), Identity: "alice", TTL: ttl})
		if err != nil {
			t.Fatalf("Campaign %d: %v", i, err)
		}
		leases[i] = l.(*lease)
	}
	waitSent(leases)
	return b, counters, leases
}

// waitSent waits until every request already sent for each lease (its
// acquire round, or the renewal and restore rounds since) has finished on
// every node: only then may a lease ride along in a batch.
func waitSent(leases []*lease) {
	for _, l := range leases {
		l.mu.Lock()
		last := l.last
		l.mu.Unlock()
		for _, done := range last {
			<-done
		}
	}
}

// warmUp renews leases[0] and then makes every lease a rider again, as if
// never renewed by a batch.
func warmUp(t *testing.T, leases []*lease) {
	t.Helper()
	if err := leases[0].Renew(testCtx(t)); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	for _, l := range leases {
		l.mu.Lock()
		l.renewed, l.used = time.Time{}, time.Time{}
		l.mu.Unlock()
	}
	waitSent(leases)
}

// calls returns the script calls each counter has seen.
func calls(counters []*scriptCounter) []int64 {
	out := make([]int64, len(counters))
	for i, c := range counters {
		out[i], _ = c.load()
	}
	return out
}

// expectCalls waits until every node has seen want[i] + d calls (a Renew
// returns once a quorum answered; the other nodes' calls may still be
// starting), and fails if some node saw more.
func expectCalls(t *testing.T, counters []*scriptCounter, want []int64, d int64, why string) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for i, c := range counters {
		for {
			n, bump := c.load()
			if n > want[i]+d {
				t.Fatalf("node %d: %d calls, want %d: %s", i, n-want[i], d, why)
			}
			if n == want[i]+d {
				break
			}
			select {
			case <-bump:
			case <-timeout.C:
				t.Fatalf("node %d: %d calls after 10s, want %d: %s", i, n-want[i], d, why)
			}
		}
	}
}

// TestRenewalsCoalesce renews 200 leases held through one Backend, all at
// once: they share a few script calls per node instead of one each.
func TestRenewalsCoalesce(t *testing.T) {
	t.Parallel()
	const k = 200
	b, counters, leases := holdMany(t, k, 30*time.Second)
	if b.batch == nil {
		t.Fatal("a Backend over single Redis servers does not batch renewals")
	}
	ctx := testCtx(t)
	warmUp(t, leases)
	for _, l := range leases {
		// Renewed just now, and that renewal used: no lease rides along in
		// a batch, and each Renew asks for a renewal of its own.
		l.mu.Lock()
		l.renewed = time.Now()
		l.used = l.renewed
		l.mu.Unlock()
	}
	before := calls(counters)
	var wg sync.WaitGroup
	errs := make(chan error, k)
	for _, l := range leases {
		wg.Go(func() {
			if err := l.Renew(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Renew: %v", err)
	}
	var total int64
	for i, after := range calls(counters) {
		// One batch on the wire at a time: the first Renew goes alone, the
		// others queue behind it, at most maxBatch to a call.
		d := after - before[i]
		total += d
		if d > 10 {
			t.Errorf("node %d: %d renewal calls for %d concurrent Renews, want at most 10: renewals coalesce", i, d, k)
		}
	}
	// A quorum answered each Renew, so at least a quorum of nodes saw a call.
	if total < int64(b.quorum) {
		t.Errorf("%d renewal calls over all nodes for %d concurrent Renews, want at least %d: each Renew asks a quorum", total, k, b.quorum)
	}
}

// TestRidersRenewedEarly renews one of 100 idle leases: the other 99 ride
// along in its call, their Deadlines move to the call's send time, and
// their own Renew then sends nothing, until a Renew finds no newer rider
// renewal to use.
func TestRidersRenewedEarly(t *testing.T) {
	t.Parallel()
	// A rider renewal serves its lease's Renew for TTL/6: 5 s, for the
	// Renews below on a loaded machine.
	const k, ttl = 100, 30 * time.Second
	b, counters, leases := holdMany(t, k, ttl)
	ctx := testCtx(t)
	warmUp(t, leases)
	before := calls(counters)
	sentAfter := time.Now()
	if err := leases[0].Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	sentBefore := time.Now()
	expectCalls(t, counters, before, 1, "one call per node for one Renew and its riders")
	lo, hi := b.cfg.deadline(sentAfter, ttl), b.cfg.deadline(sentBefore, ttl)
	for i, l := range leases {
		if d := l.Deadline(); d.Before(lo) || d.After(hi) {
			t.Fatalf("lease %d: Deadline %v after the batch, want within [%v, %v]: the batch's send time plus the validity", i, d, lo, hi)
		}
	}
	for _, l := range leases[1:] {
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("Renew: %v", err)
		}
	}
	expectCalls(t, counters, before, 1, "a rider's own Renew uses the rider renewal")
	// The rider renewal is used once: the next Renew asks again.
	if err := leases[1].Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	expectCalls(t, counters, before, 2, "a rider renewal serves one Renew")
}

// TestNoRiderRightAfterAcquire renews one of two leases just acquired: the
// other, confirmed a moment ago, does not ride along.
func TestNoRiderRightAfterAcquire(t *testing.T) {
	t.Parallel()
	// A lease acquired less than TTL/6 (5 s) ago does not ride along.
	_, counters, leases := holdMany(t, 2, 30*time.Second)
	ctx := testCtx(t)
	before := calls(counters)
	if err := leases[0].Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	expectCalls(t, counters, before, 1, "one Renew, one call")
	if err := leases[1].Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	expectCalls(t, counters, before, 2, "the second lease did not ride along right after its acquire, so its Renew sends")
}

// TestRiderLost deletes an idle lease's key on every node; another lease's
// renewal carries it along, finds it gone and closes its Lost channel.
func TestRiderLost(t *testing.T) {
	t.Parallel()
	b, _, leases := holdMany(t, 2, 10*time.Second)
	ctx := testCtx(t)
	warmUp(t, leases)
	gone := leases[1]
	for _, c := range b.clients {
		if err := c.Del(ctx, gone.key).Err(); err != nil {
			t.Fatalf("DEL: %v", err)
		}
	}
	if err := leases[0].Renew(ctx); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	// The rider is settled once every node has answered the batch, which
	// RequestTimeout bounds.
	select {
	case <-gone.Lost():
	case <-time.After(10 * b.cfg.requestTimeout):
		t.Fatal("Lost not closed after a batch found the lease on no node: a rider's loss is signalled at once")
	}
	if err := gone.Renew(ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew of the lost rider: got %v, want ErrLost", err)
	}
}

// TestRenewalsLeaveNoGoroutinePerLease renews 500 leases at once, as the
// term engine does on its grid, with two of the five nodes slow to answer,
// and counts the goroutines while those two are still pending: each Renew
// has returned on the quorum of the three others, and what waits for the
// slow nodes' replies (to put a missing key back there) must not hold a
// goroutine per lease. Once every node has answered, only the Backend's
// idle node workers are left, at most maxIdleWorkers per node. Not
// t.Parallel: it counts the process's goroutines.
func TestRenewalsLeaveNoGoroutinePerLease(t *testing.T) {
	const k = 500
	// The first lease's TTL outlasts the campaigns of the others, which
	// took most of 10 s on a loaded machine.
	b, _, leases := holdMany(t, k, 30*time.Second)
	ctx := testCtx(t)
	warmUp(t, leases)
	for _, l := range leases { // no rider renewals: each Renew asks for its own
		l.mu.Lock()
		now := time.Now()
		l.renewed, l.used = now, now // the rider renewal used already
		l.mu.Unlock()
	}
	release := make(chan struct{})
	for _, c := range b.clients[3:] {
		c.(*redis.Client).AddHook(holdRenewals{release})
	}
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	errs := make(chan error, k)
	for _, l := range leases {
		wg.Go(func() {
			if err := l.Renew(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Renew: %v", err)
	}
	// The batches to the two held nodes are in flight (at most k/maxBatch+1
	// of them each, one at a time), every lease waits for their replies.
	pending := runtime.NumGoroutine() - base
	close(release)
	waitSent(leases)
	if limit := len(b.clients) * maxIdleWorkers; pending > limit {
		t.Errorf("%d goroutines more while 2 of 5 nodes were still to answer %d renewals, want at most %d: a renewal waiting for a slow node must not hold a goroutine", pending, k, limit)
	}
	if n, limit := runtime.NumGoroutine()-base, len(b.clients)*32; n > limit {
		t.Errorf("%d goroutines more once every node answered %d renewals, want at most %d (maxIdleWorkers per node): goroutines must not grow with the leases", n, k, limit)
	}
}

// holdRenewals is a go-redis hook that holds each renewal script call until
// release is closed: a node slow to answer renewals.
type holdRenewals struct{ release chan struct{} }

func (h holdRenewals) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h holdRenewals) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isRenewal(cmd) {
			<-h.release
		}
		return next(ctx, cmd)
	}
}
func (h holdRenewals) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
