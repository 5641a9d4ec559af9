package integration_test

// A paused etcd member that resumes must not let a second leader be elected
// while the first still holds its term.
//
//	eval "$(../scripts/servers.sh env)"
//	go test -race -run 'TestEtcdPausedRaftLeader' -v .

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// A holder keeps its lease alive through the followers while the etcd raft
// leader is frozen (SIGSTOP) for longer than the TTL, then resumed. etcd
// servers without the fix for https://github.com/etcd-io/etcd/issues/15247
// (before 3.4.31, 3.5.13 and 3.6.0) let the resumed old leader revoke the
// leases that expired by its stale clock as soon as it runs again: the
// holder's key is deleted although the renewals the new leader acknowledged
// keep the lease valid. The driver must not have moved the Deadline past
// that point: no key may be deleted while the holder's Deadline still lies
// ahead. Not t.Parallel: it pauses a shared member, and reads the members'
// revoke counts, which every client's leases move.
func TestEtcdPausedRaftLeaderNoEarlyRevoke(t *testing.T) {
	const ttl = time.Second
	endpoints := etcdEndpoints(t)
	admin := etcdClient(t, endpoints...)
	member := raftLeader(t, admin, endpoints)
	var followers []string
	for i, ep := range endpoints {
		if i+1 != member {
			followers = append(followers, ep)
		}
	}
	ctx := etcdCtx(t)
	st, err := admin.Status(ctx, endpoints[member-1])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("raft leader: etcd %d (%s), version %s, term %d", member, endpoints[member-1], st.Version, st.RaftTerm)

	b := etcdBackend(t, etcdClient(t, followers...))
	name := etcdName("early-revoke")
	l, err := b.Campaign(ctx, backend.Candidate{Election: name, Identity: "holder", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	deleted := watchDelete(t, admin, name, func(kv *mvccpb.KeyValue) bool { return uint64(kv.CreateRevision) == l.Token() })

	// Renew as the elector does, every TTL/5 here, through the followers only.
	type renewal struct {
		at       time.Time
		deadline time.Time
		err      error
	}
	renewals := make(chan renewal, 1000)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 5)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(ctx, ttl/2)
			err := l.Renew(rctx)
			cancel()
			renewals <- renewal{at: time.Now(), deadline: l.Deadline(), err: err}
			if errors.Is(err, backend.ErrLost) {
				return
			}
		}
	}()
	stopRenewing := sync.OnceFunc(func() { close(stop); <-done })
	defer stopRenewing()

	// Leases that expire on the raft leader's clock just before the
	// holder's: the resumed leader proposes their revocations first, at most
	// 16 at a time, so the holder's revocation is proposed after the
	// resumed leader has learnt the new term and forwards it to the new
	// leader, which commits it. Without them the holder's revocation races
	// the step-down and is usually lost (etcd logs "failed to revoke lease").
	for range 20 {
		if _, err := admin.Grant(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	before := leaseExpiredCounts(t, endpoints)
	pausedAt := time.Now()
	testenv.Fault(t, "pause", "etcd", strconv.Itoa(member))
	t.Cleanup(func() { testenv.Fault(t, "resume", "etcd", strconv.Itoa(member)) })
	// The fault itself: the member stays frozen for 1.5 TTL. The new raft
	// leader may expire the lease meanwhile, once the holder's Deadline has
	// passed (renewals end when the driver sees the raft term change): the
	// check below holds any deletion to that Deadline.
	freeze := time.NewTimer(ttl * 3 / 2)
	var d deletion
	deletedPaused := false
	select {
	case <-freeze.C:
	case d = <-deleted:
		deletedPaused = true
		t.Logf("key deleted at revision %d while the raft leader was still paused", d.rev)
	}
	testenv.Fault(t, "resume", "etcd", strconv.Itoa(member))
	resumedAt := time.Now()

	if !deletedPaused {
		select {
		case d = <-deleted:
		case <-time.After(10 * ttl):
			t.Logf("no early revoke: the key outlived 10 TTL after the resume (server with the fix for etcd-io/etcd#15247)")
			return
		}
	}
	deadline := l.Deadline()
	after := leaseExpiredCounts(t, endpoints)
	for i := range endpoints {
		t.Logf("etcd %d: etcd_debugging_server_lease_expired_total %d -> %d", i+1, before[i], after[i])
	}
	t.Logf("paused at 0, resumed at %v; key deleted at revision %d, seen at %v; holder's Deadline at %v",
		resumedAt.Sub(pausedAt), d.rev, d.seen.Sub(pausedAt), deadline.Sub(pausedAt))
	stopRenewing()
	close(renewals)
	for r := range renewals {
		t.Logf("  renew at %v: deadline %v, err %v", r.at.Sub(pausedAt), r.deadline.Sub(pausedAt), r.err)
	}
	if d.seen.Before(deadline) {
		t.Errorf("the holder's key was deleted %v before its Deadline: two leaders possible; the Deadline must not trust renewals the resumed old raft leader's lessor never saw (etcd-io/etcd#15247)",
			deadline.Sub(d.seen))
	}
}

type deletion struct {
	rev  int64
	seen time.Time
}

// watchDelete reports the deletion of the candidate key in election name
// that match selects.
func watchDelete(t *testing.T, cli *clientv3.Client, name string, match func(*mvccpb.KeyValue) bool) <-chan deletion {
	t.Helper()
	ctx, cancel := context.WithCancel(etcdCtx(t))
	t.Cleanup(cancel)
	resp, err := cli.Get(ctx, name+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var key string
	for _, kv := range resp.Kvs {
		if match(kv) {
			key = string(kv.Key)
		}
	}
	if key == "" {
		t.Fatalf("no such candidate key in %q", name)
	}
	wch := cli.Watch(ctx, key, clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut())
	ch := make(chan deletion, 1)
	go func() {
		for wr := range wch {
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					ch <- deletion{rev: ev.Kv.ModRevision, seen: time.Now()}
					return
				}
			}
		}
	}()
	return ch
}

// leaseExpiredCounts reads etcd_debugging_server_lease_expired_total from
// each member's /metrics: it counts the leases that member revoked on
// expiry, so it tells which member revoked a lease.
func leaseExpiredCounts(t *testing.T, endpoints []string) []int {
	t.Helper()
	counts := make([]int, len(endpoints))
	for i, ep := range endpoints {
		counts[i] = -1
		c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(fmt.Sprintf("http://%s/metrics", ep))
		if err != nil {
			t.Logf("metrics of %s: %v", ep, err)
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "etcd_debugging_server_lease_expired_total "); ok {
				f, _ := strconv.ParseFloat(v, 64)
				counts[i] = int(f)
			}
		}
		_ = resp.Body.Close()
	}
	return counts
}
