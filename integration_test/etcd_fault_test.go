package integration_test

// Fault tests of the etcd driver on the three-member test cluster:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -race -run 'Etcd' -v .

import (
	"context"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/internal/testenv"
)

// Killing the etcd raft leader during a term: the term survives (keepalives
// fail over to another member within the renewal slack) or ends safely, and
// the election has a leader again within TTL + the cluster's recovery.
// Not t.Parallel: it kills a shared member.
func TestEtcdRaftLeaderKilled(t *testing.T) {
	endpoints := etcdEndpoints(t)
	admin := etcdClient(t, endpoints...)
	tl := newTermLog(etcdTTL, testLogger)
	name := etcdName("raft-kill")
	alice := tl.elector(t, etcdBackend(t, etcdClient(t, endpoints...)), name, "alice")
	runElector(t, alice)
	first := waitTerm(t, tl.elected, 20*time.Second, "first election")
	bob := tl.elector(t, etcdBackend(t, etcdClient(t, endpoints...)), name, "bob")
	runElector(t, bob)

	member := raftLeader(t, admin, endpoints)
	t.Logf("killing etcd member %d (raft leader) during %s's term (token %d)", member, first.who, first.token)
	killed := time.Now()
	testenv.Fault(t, "kill", "etcd", strconv.Itoa(member))
	t.Cleanup(func() { testenv.Fault(t, "restart", "etcd", strconv.Itoa(member)) })

	// Over 3 TTLs, someone must lead at the end, and every hand-over must be
	// clean.
	countLeaders := func() int {
		n := 0
		for _, e := range []interface{ IsLeader() bool }{alice, bob} {
			if e.IsLeader() {
				n++
			}
		}
		return n
	}
	for end := time.After(3 * etcdTTL); end != nil; {
		select {
		case lt := <-tl.ended:
			t.Logf("%s (token %d) stepped down %v after the kill", lt.who, lt.token, lt.end.Sub(killed))
		case lt := <-tl.elected:
			t.Logf("%s (token %d) elected %v after the kill", lt.who, lt.token, lt.start.Sub(killed))
		case <-end:
			end = nil
		}
	}
	// A loaded machine slows the cluster's recovery, not the check: while
	// nobody leads, wait up to 20 s more for the next election.
	if countLeaders() == 0 {
		select {
		case lt := <-tl.elected:
			t.Logf("%s (token %d) elected %v after the kill", lt.who, lt.token, lt.start.Sub(killed))
		case <-time.After(20 * time.Second):
		}
	}
	if leaders := countLeaders(); leaders != 1 {
		t.Errorf("leaders %v after killing the raft leader: got %d, want 1", time.Since(killed).Round(time.Millisecond), leaders)
	}
	h, err := alice.Leader(etcdCtx(t))
	if err != nil {
		t.Fatalf("Leader after the kill: %v", err)
	}
	if h.Token < first.token {
		t.Errorf("leader token after the kill: got %d, want >= %d", h.Token, first.token)
	}
	if h.Token == first.token {
		t.Logf("the term survived the raft leader's death (token %d)", h.Token)
	}
	tl.checkNoOverlap(t)
}

// A leader cut off from etcd by a network partition (toxiproxy timeout
// toxic: bytes are dropped, connections stay open) steps down before its
// lease can expire at the server, and its successor's token is greater.
// The proxy is the test's own, in front of alice's connection only, so it
// runs in parallel.
func TestEtcdPartitionedLeaderStepsDown(t *testing.T) {
	t.Parallel()
	endpoints := etcdEndpoints(t)
	proxy := startToxiproxy(t, "etcd", endpoints[0])
	// The widest safety margin (under TTL/2): the step-down comes 5.5 s
	// before the lease can expire at the server, longer than a loaded
	// machine delays the one or the other.
	const ttl = 12 * time.Second
	tl := newTermLog(ttl, testLogger)
	tl.margin = 5500 * time.Millisecond
	name := etcdName("partition")
	alice := tl.elector(t, etcdBackend(t, etcdClient(t, proxy.Listen)), name, "alice")
	runElector(t, alice)
	first := waitTerm(t, tl.elected, 20*time.Second, "alice's election")
	bob := tl.elector(t, etcdBackend(t, etcdClient(t, endpoints[1:]...)), name, "bob")
	runElector(t, bob)
	admin := etcdClient(t, endpoints...)
	waitQueued(t, admin, name, "bob")
	expired := watchExpiry(t, admin, name, "alice")

	cut := time.Now()
	heal := cutLinks(t, proxy)

	down := waitTerm(t, tl.ended, 2*ttl, "step-down of the cut-off leader")
	next := waitTerm(t, tl.elected, 2*ttl, "successor's election")
	heal()
	if down.who != first.who || next.who != "bob" {
		t.Fatalf("got %s stepping down and %s elected, want alice then bob", down.who, next.who)
	}
	margin := next.start.Sub(down.end)
	gone := <-expired
	t.Logf("cut at 0; alice stepped down at %v; the server expired her lease at %v; bob elected at %v (TTL %v)",
		down.end.Sub(cut), gone.Sub(cut), next.start.Sub(cut), ttl)
	t.Logf("step-down margin: %v before the server-side expiry, %v before the successor's election",
		gone.Sub(down.end), margin)
	if !down.end.Before(gone) {
		t.Errorf("alice stepped down %v after the server expired her lease; want before", down.end.Sub(gone))
	}
	if margin <= 0 {
		t.Errorf("successor elected %v before the cut-off leader stepped down; want after", -margin)
	}
	if next.token <= first.token {
		t.Errorf("successor token: got %d, want > %d", next.token, first.token)
	}
	tl.checkNoOverlap(t)
}

// waitQueued waits until a candidate with identity who has a key in
// election name (concurrency.Election's layout).
func waitQueued(t *testing.T, cli *clientv3.Client, name, who string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(etcdCtx(t), 20*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, name+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Value) == who {
			return
		}
	}
	for wr := range cli.Watch(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT && string(ev.Kv.Value) == who {
				return
			}
		}
	}
	t.Fatalf("%s never queued in %q", who, name)
}

// watchExpiry finds who's candidate key in election name and reports when
// an admin watch sees it deleted.
func watchExpiry(t *testing.T, cli *clientv3.Client, name, who string) <-chan time.Time {
	t.Helper()
	d := watchDelete(t, cli, name, func(kv *mvccpb.KeyValue) bool { return string(kv.Value) == who })
	ch := make(chan time.Time, 1)
	go func() { ch <- (<-d).seen }()
	return ch
}
