package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/internal/testproxy"
)

// loggedBackend returns a Backend whose client reaches the apiserver
// through p and records its requests in the returned log.
func loggedBackend(t *testing.T, s server, p *testproxy.Proxy) (*Backend, *requestLog) {
	t.Helper()
	cli, log := s.loggedVia(t, p.Addr())
	b, err := New(cli, s.ns, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, log
}

// takeOver writes another holder's record onto the Lease name, as a
// client-go candidate that takes it over does.
func takeOver(t *testing.T, s server, name string) {
	t.Helper()
	raw := s.client(t).Leases(s.ns)
	l, err := raw.Get(testCtx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("foreign read: %v", err)
	}
	id, n := "intruder", transitionsOf(l)+1
	l.Spec.HolderIdentity, l.Spec.LeaseTransitions = &id, &n
	if _, err := raw.Update(testCtx(t), l, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("foreign write: %v", err)
	}
}

// awaitLost fails t unless l's Lost closes within d.
func awaitLost(t *testing.T, l *lease, d time.Duration, what string) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(d):
		t.Fatalf("Lost still open %v after %s; want it closed from the watch, with no renewal made", d, what)
	}
}

// The Backend's watch of its namespace's Leases, which its waiting
// Campaigns and its held leases share, lists them once, when it starts.
func TestFollowListsOnce(t *testing.T) {
	t.Parallel() // a Lease of its own; the lists counted are its own client's
	s := testServer(t)
	p := testproxy.New(t, s.addr())
	b, log := loggedBackend(t, s, p)
	l := mustCampaign(t, b, cand(testName(t), "holder"))
	log.awaitWatch(t, 30*time.Second)
	if n := log.namespaceLists(); n != 1 {
		t.Errorf("the Backend's watch started after %d lists of the namespace's Leases; want 1", n)
	}
	takeOver(t, s, l.name)
	// No renewal is made: only the watch can close Lost.
	awaitLost(t, l, 10*time.Second, "the Lease was taken over")
}

// After its connection fails, the holder's watch resumes from the last
// version it saw: a take-over while it was down closes Lost once the
// apiserver is reachable again, without reading the namespace's Leases.
func TestFollowResumesAfterCut(t *testing.T) {
	t.Parallel() // it cuts a proxy of its own, not the apiserver
	s := testServer(t)
	p := testproxy.New(t, s.addr())
	b, log := loggedBackend(t, s, p)
	l := mustCampaign(t, b, cand(testName(t), "holder"))
	log.awaitWatch(t, 30*time.Second)
	p.Cut()
	takeOver(t, s, l.name) // through a client of its own, not cut
	select {
	case <-l.Lost():
		t.Fatal("Lost closed while the holder could not reach the apiserver; want it to learn from the resumed watch")
	default:
	}
	p.Heal()
	healed := time.Now()
	// The watch starts again within followRetry; client-go retries a watch
	// request that met a closed connection a second later. 10 s more for a
	// loaded machine: a watch that does not resume never closes Lost.
	awaitLost(t, l, followRetry+time.Second+10*time.Second, "the apiserver became reachable again")
	t.Logf("Lost closed %v after the apiserver became reachable again", time.Since(healed).Round(time.Millisecond))
	if n := log.namespaceLists(); n != 1 {
		t.Errorf("the holder's watch was started again after %d lists of the namespace's Leases; want 1, the first: it resumes from the last version it saw", n)
	}
}

// When the apiserver can no longer resume the watch from its version
// (410 Gone, after an outage longer than the apiserver keeps history),
// the holder lists the namespace's Leases and finishes a held lease the
// list shows taken over. It runs alone: it restarts the apiserver and
// compacts etcd.
func TestFollowListsWhenVersionExpired(t *testing.T) {
	s := testServer(t)
	// The outage: a restarted apiserver's watch cache starts at the current
	// version. A fresh one started at version 1 and still serves a watch
	// from there.
	testenv.Fault(t, "restart", "kube", "1")
	b := testBackend(t, s, nil)
	b.mu.Lock()
	b.caching = true // this test runs the watch's steps itself
	b.mu.Unlock()
	if _, err := b.cache.relist(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	l := mustCampaign(t, b, cand(testName(t), "holder"))
	takeOver(t, s, l.name)
	// Version 1 must be gone from etcd's history too: an apiserver whose
	// cache is not ready serves the watch from etcd, which it compacts only
	// every five minutes. Below revision 10 it disturbs no other watch:
	// they all run from far later versions.
	compactBelow(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rv, _ := b.cache.once(ctx, "1"); rv != "" {
		t.Fatalf(`once from resourceVersion 1 (compacted away) returned %q; want "": list again`, rv)
	}
	if ctx.Err() != nil {
		t.Fatal("once from a compacted version waited for its ctx; want it to return at the apiserver's 410")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.cache.once(ctx, "")
	}()
	awaitLost(t, l, 20*time.Second, "the list showed the Lease taken over")
	cancel()
	<-done
}

// compactBelow compacts the history of the etcd cluster the apiserver
// stores in below revision rev, unless it already is.
func compactBelow(t *testing.T, rev int64) {
	t.Helper()
	if _, err := etcdClient(t).Compact(testCtx(t), rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("compacting etcd below revision %d: %v", rev, err)
	}
}
