package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testproxy"
)

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("New(nil client): got %v, want ErrInvalid", err)
	}
	cli := &clientv3.Client{} // never used: New fails before
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{DriftFactor: -0.1}, "Options.DriftFactor is -0.1; want a fraction in (0, 0.5]"},
		{Options{DriftFactor: 0.6}, "Options.DriftFactor is 0.6; want a fraction in (0, 0.5]"},
		{Options{CleanupTimeout: -time.Second}, "Options.CleanupTimeout is -1s; want >= 0"},
	} {
		_, err := New(cli, &tc.o)
		if !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): got %v, want ErrInvalid containing %q", tc.o, err, tc.want)
		}
	}
	for _, o := range []Options{{DriftFactor: 0.5}, {DriftFactor: 0}} {
		if _, err := New(cli, &o); err != nil {
			t.Errorf("New(%+v): %v, want success", o, err)
		}
	}
}

func TestTTLSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{{time.Second, 1}, {1001 * time.Millisecond, 2}, {1500 * time.Millisecond, 2}, {15 * time.Second, 15}} {
		got, err := ttlSeconds(tc.ttl)
		if err != nil || got != tc.want {
			t.Errorf("ttlSeconds(%v): got (%d, %v), want %d: etcd leases are whole seconds, rounded up", tc.ttl, got, err, tc.want)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Second, 999 * time.Millisecond} {
		if _, err := ttlSeconds(ttl); !errors.Is(err, backend.ErrInvalid) || !strings.Contains(err.Error(), "want 1s to") {
			t.Errorf("ttlSeconds(%v): got %v, want ErrInvalid naming the range", ttl, err)
		}
	}
}

func TestIsCandidate(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"jobs/694d77a5f0c1b23a": true,
		"jobs/7":                true,
		"jobs/":                 false,
		"jobs/eu/694d77a5":      false, // election "jobs/eu"
		"jobs/a/694d77a5":       false, // election "jobs/a": inside the hex range
		"jobs/694D77A5":         false,
		"jobsx/694d":            false,
	} {
		if got := isCandidate("jobs/", []byte(key)); got != want {
			t.Errorf("isCandidate(%q): got %v, want %v", key, got, want)
		}
	}
}

// The key, value and lease are concurrency.Election's. Not t.Parallel: each
// lease, on a 2 s etcd lease that nothing renews, must outlast the read
// before its Release.
func TestKeyLayout(t *testing.T) {
	cli := testClient(t)
	for _, prefix := range []string{"", "/elector/"} {
		b := testBackend(t, cli, &Options{Prefix: prefix})
		name := testName(t)
		l := mustCampaign(t, b, cand(name, "alice"))
		want := prefix + name + "/" + strconv.FormatInt(int64(l.s.id), 16)
		resp, err := cli.Get(testCtx(t), prefix+name+"/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("keys under %q: got %d, want 1", prefix+name+"/", len(resp.Kvs))
		}
		kv := resp.Kvs[0]
		if string(kv.Key) != want || string(kv.Value) != "alice" || kv.Lease != int64(l.s.id) || uint64(kv.CreateRevision) != l.Token() {
			t.Errorf("candidate key: got %q=%q lease %x rev %d, want %q=%q lease %x rev %d",
				kv.Key, kv.Value, kv.Lease, kv.CreateRevision, want, "alice", int64(l.s.id), l.Token())
		}
		if err := l.Release(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// Many elections on one Backend share one etcd lease, and their renewals
// share keepalives.
func TestSharedLease(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	counter := &countingLease{Lease: cli.Lease}
	cli.Lease = counter
	b := testBackend(t, cli, nil)
	base := testName(t)
	const n = 100
	// Renewed every TTL/4 below: the lease outlasts 6 s of stalls between
	// two rounds, and a round's renewals share a keepalive over TTL/5.
	const ttl = 8 * time.Second
	leases := make([]*lease, n)
	for i := range leases {
		leases[i] = mustCampaign(t, b, backend.Candidate{Election: fmt.Sprintf("%s/e%d", base, i), Identity: "alice", TTL: ttl})
		if leases[i].s != leases[0].s {
			t.Fatalf("election %d: got etcd lease %x, want the shared %x", i, int64(leases[i].s.id), int64(leases[0].s.id))
		}
	}
	// Three rounds of renewals, as electors with RenewInterval TTL/3 make.
	before := counter.n.Load()
	for range 3 {
		time.Sleep(ttl / 4) // lets the shared acknowledgement age past reuse
		var wg sync.WaitGroup
		for _, l := range leases {
			wg.Go(func() {
				if err := l.Renew(testCtx(t)); err != nil {
					t.Errorf("Renew: %v", err)
				}
			})
		}
		wg.Wait()
	}
	sent := counter.n.Load() - before
	t.Logf("%d renewals of %d elections sent %d keepalives", 3*n, n, sent)
	if sent > 6 {
		t.Errorf("keepalives for 3 rounds of %d renewals: got %d, want at most 6: renewals share keepalives", n, sent)
	}
	// Released together: one after the other they can outlast the TTL on a
	// loaded machine.
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() {
			if err := l.Release(testCtx(t)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

// Upstream's Campaign keeps waiting after its lease is gone (etcd#19597).
// Not t.Parallel: the waiting Campaign's 2 s lease lives on its keepalives
// alone, and must not lapse before the test revokes it.
func TestLostWhileWaiting(t *testing.T) {
	cli := testClient(t)
	holder := mustCampaign(t, testBackend(t, cli, nil), unrenewed(testName(t), "alice"))
	name := holder.election
	for _, how := range []string{"lease revoked", "key deleted"} {
		t.Run(how, func(t *testing.T) {
			b := testBackend(t, testClient(t), nil)
			ch := campaignAsync(testCtx(t), b, cand(name, "bob"))
			queued(t, b, name, 2, ch)
			b.mu.Lock()
			ss := b.sessions[int64(testTTL/time.Second)]
			b.mu.Unlock()
			if len(ss) == 0 {
				t.Fatal("no session once the Campaign has queued")
			}
			s := ss[0]
			s.mu.Lock()
			key := s.users[name].key
			s.mu.Unlock()
			start := time.Now()
			var err error
			if how == "lease revoked" {
				_, err = cli.Revoke(testCtx(t), s.id)
			} else {
				_, err = cli.Delete(testCtx(t), key)
			}
			if err != nil {
				t.Fatal(err)
			}
			// Upstream keeps waiting: that shows as no result at all.
			r := await(t, ch, 10*time.Second)
			if !errors.Is(r.err, backend.ErrLost) {
				t.Fatalf("waiting Campaign after its %s: got (%v, %v), want ErrLost", how, r.l, r.err)
			}
			t.Logf("Campaign returned %v after its %s", time.Since(start), how)
		})
	}
	if err := holder.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// Upstream leaves the key of a canceled Campaign (etcd#21128). Not
// t.Parallel: the Campaign's put must be answered well within its 200 ms;
// one still in flight at the cancel may be applied after the delete
// (TestLatePutOfAbandonedCampaign), and other tests' load makes that
// likelier.
func TestCanceledCampaignLeavesNoKey(t *testing.T) {
	cli := testClient(t)
	holder := mustCampaign(t, testBackend(t, cli, nil), unrenewed(testName(t), "alice"))
	dir := holder.election + "/"
	ctx, cancel := context.WithTimeout(testCtx(t), 200*time.Millisecond)
	defer cancel()
	if _, err := testBackend(t, cli, nil).Campaign(ctx, cand(holder.election, "bob")); err != context.DeadlineExceeded {
		t.Fatalf("Campaign: got %v, want context.DeadlineExceeded", err)
	}
	resp, err := cli.Get(testCtx(t), dir, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 1 {
		t.Errorf("keys under %q after the canceled Campaign: got %d, want 1 (the holder's)", dir, resp.Count)
	}
	if err := holder.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// A failed Release gives the lease up: Lost closes, Renew fails, and its
// key, on an etcd lease that other candidates keep alive, is deleted by the
// next keepalive instead of living on with it; the retired etcd lease takes
// no new candidate. A key left on a lease kept alive for others would
// outlive its holder for as long as the process ran, its election without
// a leader meanwhile.
func TestFailedReleaseOrphansKey(t *testing.T) {
	t.Parallel()
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	name := testName(t)
	other := mustCampaign(t, b, unrenewed(name+"-other", "alice"))
	l := mustCampaign(t, b, unrenewed(name, "alice"))
	if l.s != other.s {
		t.Fatal("two candidates with one TTL on one Backend have two etcd leases; want one shared")
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	if err := l.Release(ctx); err != context.Canceled {
		t.Fatalf("Release with a canceled ctx: got %v, want context.Canceled", err)
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("Lost open after a failed Release; want it closed: the lease was given up")
	}
	if err := l.Renew(testCtx(t)); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Renew after a failed Release: got %v, want an error wrapping ErrLost", err)
	}
	if _, err := other.s.send(testCtx(t), l.key); err != nil { // the other candidate's next keepalive
		t.Fatal(err)
	}
	resp, err := cli.Get(testCtx(t), l.key)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("key %q still there after a keepalive of its shared etcd lease; want it deleted: nobody holds it", l.key)
	}
	if err := other.Renew(testCtx(t)); err != nil {
		t.Fatalf("the other candidate's Renew: got %v, want nil: a failed Release gives up only its own key", err)
	}
	next := mustCampaign(t, b, unrenewed(name, "bob"))
	if next.s == l.s {
		t.Error("a new candidate joined the etcd lease of a failed Release; want a new one")
	}
	if err := l.Release(testCtx(t)); err != nil && !errors.Is(err, backend.ErrLost) {
		t.Fatalf("second Release: got %v, want nil or ErrLost", err)
	}
	for _, l := range []*lease{next, other} {
		if err := l.Release(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
}

// Guard commits writes only while the term is current. Not t.Parallel: its
// terms are on 2 s leases that nothing renews, and each must outlast
// several requests (its Release fails once the lease has lapsed).
func TestGuard(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	name := testName(t)
	data := name + "-data"
	la := mustCampaign(t, b, cand(name, "alice"))
	guard, err := b.Guard(name, la.Token())
	if err != nil {
		t.Fatalf("Guard: %v", err)
	}
	put := func(g clientv3.Cmp, v string) bool {
		t.Helper()
		resp, err := cli.Txn(testCtx(t)).If(g).Then(clientv3.OpPut(data, v)).Commit()
		if err != nil {
			t.Fatal(err)
		}
		return resp.Succeeded
	}
	if !put(guard, "alice") {
		t.Fatal("guarded put by the leader: not committed, want committed")
	}
	ch := campaignAsync(testCtx(t), testBackend(t, cli, nil), cand(name, "bob"))
	if err := la.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 10*time.Second)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if put(guard, "stale alice") {
		t.Error("guarded put by the former leader after a successor was elected: committed, want refused")
	}
	if _, err := b.Guard(name, la.Token()); !errors.Is(err, backend.ErrLost) {
		t.Errorf("Guard of a released term: got %v, want ErrLost", err)
	}
	resp, err := cli.Get(testCtx(t), data)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "alice" {
		t.Errorf("data: got %v (%v), want alice's write only", resp, err)
	}
	if err := r.l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	_, _ = cli.Delete(testCtx(t), data)
}

// The granted TTL is whole seconds and the Deadline follows it. Not
// t.Parallel: the 2 s lease, which nothing renews, must still be there for
// the Release.
func TestDeadlineFromGrant(t *testing.T) {
	b := testBackend(t, testClient(t), nil)
	start := time.Now()
	l, err := b.Campaign(testCtx(t), backend.Candidate{Election: testName(t), Identity: "alice", TTL: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	if d := l.Deadline(); !d.After(start.Add(1500*time.Millisecond)) || d.After(returned.Add(2*time.Second)) {
		t.Errorf("Deadline after Campaign with TTL 1.5s: got %v after the call and %v after its return, want above 1.5s and at most 2s: rounded up to 2s less drift",
			d.Sub(start), d.Sub(returned))
	}
	if _, err := b.Campaign(testCtx(t), backend.Candidate{Election: testName(t), Identity: "alice", TTL: 500 * time.Millisecond}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("Campaign with TTL 500ms: got %v, want ErrInvalid", err)
	}
	if err := l.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// A Campaign waiting while etcd is unreachable stays responsive: Close ends
// it at once although its keepalive hangs. The waiter's TTL is 15 s: a
// keepalive every TTL/3, each bounded by TTL/3 (5 s; RequestTimeout is
// longer), which a Close that waited for it would take.
func TestCloseWhileCutOff(t *testing.T) {
	t.Parallel()
	const ttl = 15 * time.Second
	cli := testClient(t)
	holder := mustCampaign(t, testBackend(t, cli, nil), unrenewed(testName(t), "alice"))
	p := testproxy.New(t, cli.Endpoints()[0])
	defer p.Close()
	pcli := newClient(t, []string{p.Addr()})
	defer func() { _ = pcli.Close() }()
	keepalives := &countingLease{Lease: pcli.Lease, calls: make(chan struct{}, 1)}
	pcli.Lease = keepalives
	watches := signalWatcher{pcli.Watcher, make(chan struct{}, 1)}
	pcli.Watcher = watches
	b, err := New(pcli, &Options{CleanupTimeout: 100 * time.Millisecond, RequestTimeout: ttl})
	if err != nil {
		t.Fatal(err)
	}
	ch := campaignAsync(testCtx(t), b, backend.Candidate{Election: holder.election, Identity: "bob", TTL: ttl})
	queued(t, b, holder.election, 2, ch)
	// Then the Campaign watches its predecessor and keeps its session
	// alive meanwhile: cut once both have begun.
	select {
	case <-watches.calls:
	case r := <-ch:
		t.Fatalf("Campaign returned (%v, %v) while the election was held; want it waiting", r.l, r.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Campaign did not watch its predecessor within 5s")
	}
	select {
	case <-keepalives.calls: // from before the watch
	default:
	}
	select {
	case <-keepalives.calls:
	case <-time.After(2 * ttl):
		t.Fatalf("no keepalive of the waiting Campaign's session within %v of its watch", 2*ttl)
	}
	p.Cut()
	// Close must meet a keepalive of the waiter's session in flight while
	// cut off, which hangs: one already under way, or the next one its
	// schedule sends.
	select {
	case <-keepalives.calls: // reported before now: the count below tells
	default:
	}
	if keepalives.inflight.Load() == 0 {
		select {
		case <-keepalives.calls:
		case <-time.After(2 * ttl):
			t.Fatalf("no keepalive of the waiting Campaign's session within %v of the cut", 2*ttl)
		}
	}
	closed := time.Now()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r := await(t, ch, 2*ttl)
	if !errors.Is(r.err, backend.ErrClosed) {
		t.Errorf("Campaign after Close: got (%v, %v), want ErrClosed", r.l, r.err)
	}
	// Close itself waits CleanupTimeout (100 ms) for its revokes.
	if d := time.Since(closed); d > ttl/6 {
		t.Errorf("Campaign returned %v after Close, want within %v: not after its keepalive (bounded by %v)", d, ttl/6, ttl/3)
	}
	p.Heal()
	if err := holder.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// Many Campaigns started at once on one Backend (a cold start) share one
// etcd lease: a Campaign that finds no session while another grants one
// waits for that grant instead of granting its own. Not t.Parallel: the 50
// Campaigns must all be in before the 2 s etcd lease they share, which
// nothing renews, lapses.
func TestSharedLeaseColdStart(t *testing.T) {
	b := testBackend(t, testClient(t), nil)
	base := testName(t)
	const n = 50
	chs := make([]<-chan result, n)
	for i := range chs {
		chs[i] = campaignAsync(testCtx(t), b, cand(fmt.Sprintf("%s/e%d", base, i), "alice"))
	}
	ids := map[clientv3.LeaseID]int{}
	for _, ch := range chs {
		r := await(t, ch, 30*time.Second)
		if r.err != nil {
			t.Fatalf("Campaign: %v", r.err)
		}
		ids[r.l.(*lease).s.id]++
	}
	if len(ids) != 1 {
		t.Errorf("%d Campaigns at once: got %d etcd leases, want 1 shared", n, len(ids))
	}
}
