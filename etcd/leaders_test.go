package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testproxy"
)

// readCounter counts the read requests that reach the client: Txns, Gets
// and TimeToLives. With maxOps set, a Txn of more operations fails as on a
// cluster whose --max-txn-ops is maxOps.
type readCounter struct {
	clientv3.KV
	clientv3.Lease
	txns, gets, ttls atomic.Int64
	maxOps           int
}

func (c *readCounter) Txn(ctx context.Context) clientv3.Txn {
	c.txns.Add(1)
	return &limitedTxn{Txn: c.KV.Txn(ctx), max: c.maxOps}
}

func (c *readCounter) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	c.gets.Add(1)
	return c.KV.Get(ctx, key, opts...)
}

func (c *readCounter) TimeToLive(ctx context.Context, id clientv3.LeaseID, opts ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	c.ttls.Add(1)
	return c.Lease.TimeToLive(ctx, id, opts...)
}

func (c *readCounter) reset() { c.txns.Store(0); c.gets.Store(0); c.ttls.Store(0) }

// limitedTxn is a Txn that the cluster refuses, as etcd does, when it has
// more than max operations (max 0: no limit).
type limitedTxn struct {
	clientv3.Txn
	max, ops int
}

func (t *limitedTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.ops += len(ops)
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *limitedTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.max > 0 && t.ops > t.max {
		return nil, rpctypes.ErrTooManyOps
	}
	return t.Txn.Commit()
}

// countedClient returns a client on the test cluster whose reads the
// returned counter counts.
func countedClient(t *testing.T) (*clientv3.Client, *readCounter) {
	cli := testClient(t)
	c := &readCounter{KV: cli.KV, Lease: cli.Lease}
	cli.KV, cli.Lease = c, c
	return cli, c
}

// numbered returns n election names: base/0, base/1, …
func numbered(base string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/%d", base, i)
	}
	return out
}

// TestLeadersOneTxnPer128: Leaders reads 200 elections in two Txns and one
// TimeToLive per distinct lease, and reports what Leader reports for each:
// held on two leases (two Backends), free, and an invalid name.
func TestLeadersOneTxnPer128(t *testing.T) {
	t.Parallel()
	setup := testClient(t)
	alice, bob := testBackend(t, setup, nil), testBackend(t, testClient(t), nil)
	cli, count := countedClient(t)
	b := testBackend(t, cli, nil)
	ctx := testCtx(t)
	base := testName(t)

	elections := numbered(base, 200)
	for i := range elections {
		// Nothing renews these leases: their TTLs outlast the reads below
		// on a loaded machine, and are whole seconds for TimeToLive.
		switch i % 4 {
		case 0:
			mustCampaign(t, alice, backend.Candidate{Election: elections[i], Identity: "alice", TTL: 20 * time.Second})
		case 1:
			mustCampaign(t, bob, backend.Candidate{Election: elections[i], Identity: "bob", TTL: 15 * time.Second})
		}
	}
	elections[7] = "bad\x00name"
	count.reset()
	holders, errs := b.Leaders(ctx, elections)
	if got := count.txns.Load(); got != 2 {
		t.Errorf("Leaders of 200 elections sent %d Txns; want 2 (128 ranges each)", got)
	}
	if got := count.gets.Load(); got != 0 {
		t.Errorf("Leaders sent %d Gets; want 0", got)
	}
	if got := count.ttls.Load(); got != 2 {
		t.Errorf("Leaders sent %d TimeToLives; want 2 (alice's and bob's shared leases)", got)
	}
	for i, e := range elections {
		want, wantErr := b.Leader(ctx, e)
		switch {
		case wantErr != nil && errs[i] == nil, wantErr == nil && errs[i] != nil:
			t.Errorf("%q: Leaders gave (%+v, %v); Leader (%+v, %v)", e, holders[i], errs[i], want, wantErr)
		case errors.Is(wantErr, backend.ErrNoLeader) != errors.Is(errs[i], backend.ErrNoLeader),
			errors.Is(wantErr, backend.ErrInvalid) != errors.Is(errs[i], backend.ErrInvalid):
			t.Errorf("%q: Leaders failed with %v; Leader with %v", e, errs[i], wantErr)
		case holders[i].Identity != want.Identity || holders[i].Token != want.Token || (holders[i].TTL > 0) != (want.TTL > 0):
			t.Errorf("%q: Leaders gave %+v; Leader %+v", e, holders[i], want)
		}
	}
	if !errors.Is(errs[7], backend.ErrInvalid) {
		t.Errorf("the invalid name: got %v; want ErrInvalid", errs[7])
	}
	if holders[0].Identity != "alice" || holders[1].Identity != "bob" || !errors.Is(errs[2], backend.ErrNoLeader) || holders[0].TTL <= 0 {
		t.Errorf("got %+v, %+v, %v; want alice (with a TTL), bob, no leader", holders[0], holders[1], errs[2])
	}
}

// TestLeadersTooManyOps: on a cluster allowing fewer operations per Txn
// than maxTxnRanges, Leaders halves its Txns until the cluster accepts them,
// and keeps that size for later calls.
func TestLeadersTooManyOps(t *testing.T) {
	t.Parallel()
	alice := testBackend(t, testClient(t), nil)
	cli, count := countedClient(t)
	count.maxOps = 50
	b := testBackend(t, cli, nil)
	ctx := testCtx(t)
	base := testName(t)
	elections := numbered(base, 200)
	mustCampaign(t, alice, unrenewed(elections[150], "alice"))

	check := func(call string) {
		t.Helper()
		holders, errs := b.Leaders(ctx, elections)
		for i := range elections {
			switch {
			case i == 150 && (errs[i] != nil || holders[i].Identity != "alice"):
				t.Errorf("%s: election %d: got (%+v, %v); want alice", call, i, holders[i], errs[i])
			case i != 150 && !errors.Is(errs[i], backend.ErrNoLeader):
				t.Errorf("%s: election %d: got (%+v, %v); want no leader", call, i, holders[i], errs[i])
			}
		}
	}
	check("first call")
	// 128 and 64 refused, then 7 of 32.
	if got := count.txns.Load(); got != 9 {
		t.Errorf("first call: %d Txns; want 9 (128 and 64 refused, then 7 of 32)", got)
	}
	count.reset()
	check("second call")
	if got := count.txns.Load(); got != 7 {
		t.Errorf("second call: %d Txns; want 7 (32 elections each, the size that worked)", got)
	}
}

// TestLeadersEnded: Leaders reports ctx.Err() for every election when ctx
// has ended, and ErrClosed after Close.
func TestLeadersEnded(t *testing.T) {
	t.Parallel()
	b := testBackend(t, testClient(t), nil)
	base := testName(t)
	elections := []string{base + "/a", base + "/b"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errs := b.Leaders(ctx, elections)
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("election %d with ctx cancelled: got %v; want context.Canceled", i, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, errs = b.Leaders(testCtx(t), elections)
	for i, err := range errs {
		if !errors.Is(err, backend.ErrClosed) {
			t.Errorf("election %d after Close: got %v; want ErrClosed", i, err)
		}
	}
}

// TestLeadersCutOff: with etcd unreachable, Leaders fails every election
// within RequestTimeout, naming it, instead of waiting for ctx. Not
// t.Parallel: the reads before the cut, on a fresh connection, must be
// answered within the 2 s RequestTimeout.
func TestLeadersCutOff(t *testing.T) {
	cli := testClient(t)
	base := testName(t)
	elections := []string{base + "/held", base + "/free"}
	mustCampaign(t, testBackend(t, cli, nil), unrenewed(elections[0], "alice"))
	p := testproxy.New(t, cli.Endpoints()[0])
	defer p.Close()
	pcli := newClient(t, []string{p.Addr()})
	defer func() { _ = pcli.Close() }()
	// Long enough for the reads before the cut on a loaded machine, and
	// far below the minute ctx allows.
	const bound = 2 * time.Second
	b := testBackend(t, pcli, &Options{RequestTimeout: bound})
	if _, errs := b.Leaders(testCtx(t), elections); errs[0] != nil {
		t.Fatalf("Leaders before the cut: %v", errs[0])
	}
	p.Cut()
	began := time.Now()
	_, errs := b.Leaders(testCtx(t), elections)
	took := time.Since(began)
	for i, err := range errs {
		if err == nil || errors.Is(err, backend.ErrNoLeader) || !strings.Contains(err.Error(), elections[i]) {
			t.Errorf("election %d while cut off: got %v; want an error naming %q", i, err, elections[i])
		}
	}
	if took > 10*bound {
		t.Errorf("Leaders took %v while cut off; want about RequestTimeout (%v)", took, bound)
	}
	p.Heal()
}
