package etcd

import (
	"errors"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// TestLatePutOfAbandonedCampaign: a Campaign that gave up while its put was
// in flight deletes its key, but the put may be applied after that delete
// (two requests, possibly to two members). The key then sat first in the
// election's queue, keeping every candidate out for as long as the shared
// session lived: an etcd partition stayed unowned 11 s after a
// pause-majority healed, in the partition chaos. The session's keepalives
// now delete such a key until a delete finds it. Not t.Parallel: the
// session is a 2 s etcd lease that nothing renews before the test's own
// keepalive, five requests later.
func TestLatePutOfAbandonedCampaign(t *testing.T) {
	cli := testClient(t)
	b := testBackend(t, cli, nil)
	ctx := testCtx(t)
	base := testName(t)
	held := mustCampaign(t, b, cand(base+"/held", "alice")) // keeps the session alive
	election := base + "/abandoned"

	// A campaign whose put was sent and not answered, abandoned: its
	// delete finds no key.
	secs, err := ttlSeconds(testTTL)
	if err != nil {
		t.Fatal(err)
	}
	l := &lease{b: b, election: election, lost: make(chan struct{})}
	s, err := b.reserve(ctx, l, secs)
	if err != nil {
		t.Fatal(err)
	}
	if s != held.s {
		t.Fatalf("the abandoned campaign got a session of its own; want the held lease's (shared)")
	}
	l.s, l.key, l.put = s, candidateKey(b.electionDir(election), s.id), true
	l.abandon(ctx)

	// The put is applied now, late, on the session's lease.
	if _, err := cli.Put(ctx, l.key, "alice", clientv3.WithLease(s.id)); err != nil {
		t.Fatal(err)
	}
	if h, err := b.Leader(ctx, election); err != nil || h.Identity != "alice" {
		t.Fatalf("Leader after the late put: got (%+v, %v); want the late key's holder", h, err)
	}
	// The session's next keepalive deletes it, and another candidate wins.
	if _, err := s.send(ctx, held.key); err != nil {
		t.Fatal(err)
	}
	if h, err := b.Leader(ctx, election); !errors.Is(err, backend.ErrNoLeader) {
		t.Fatalf("Leader after a keepalive: got (%+v, %v); want no leader: the late key is deleted", h, err)
	}
	// The orphan is forgotten once deleted: later keepalives send no more
	// deletes for it.
	s.mu.Lock()
	left := len(s.orphans)
	s.mu.Unlock()
	if left != 0 {
		t.Errorf("%d orphans left after the late key was deleted; want 0", left)
	}
	other := testBackend(t, testClient(t), nil)
	if _, err := other.Campaign(ctx, cand(election, "bob")); err != nil {
		t.Fatalf("another candidate after the late key was deleted: %v", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
