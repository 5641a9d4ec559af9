package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/prioritytest"
	"github.com/leaderkit/elector/internal/testenv"
)

// A withdrawal that reached only a quorum of the nodes hides the entry from
// every later quorum read, even one that meets the nodes it missed, which
// still hold the entry.
func TestWithdrawReachingAQuorum(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	w, wn := perNodeBackend(t)
	name := name(t)
	reg, err := w.Register(ctx, backend.Candidate{Election: name, Identity: "alice", TTL: time.Minute}, false)
	if err != nil {
		t.Fatal(err)
	}
	n, spare := len(wn), len(wn)-w.quorum
	// The withdrawal misses nodes [0, spare).
	for _, s := range wn[:spare] {
		s.isolated.Store(true)
	}
	if err := reg.Withdraw(ctx); err != nil {
		t.Fatalf("Withdraw with %d of %d nodes cut off: %v; want nil: a quorum answered", spare, n, err)
	}
	// The reader hears those nodes and just enough others for a quorum.
	r, rn := perNodeBackend(t)
	for _, s := range rn[spare : 2*spare] {
		s.isolated.Store(true)
	}
	got, err := r.Entries(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("Entries after a withdrawal a quorum heard, read on the %d nodes it missed and %d it reached: got %v, want none", spare, n-2*spare, got)
	}
	if err := reg.Refresh(ctx); !errors.Is(err, backend.ErrLost) {
		t.Fatalf("Refresh after Withdraw: got %v, want an error wrapping ErrLost", err)
	}
}

// A registration that failed leaves no entry behind, even where its write
// landed and only the reply was lost: no reader sees a candidate that is
// not registered.
func TestFailedRegisterLeavesNoEntry(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	w, wn := perNodeBackend(t)
	name := name(t)
	// Every node runs the write; a quorum of them loses the reply.
	for _, s := range wn[:w.quorum] {
		s.lostReply.Store(true)
	}
	if reg, err := w.Register(ctx, backend.Candidate{Election: name, Identity: "alice", TTL: time.Minute}, false); err == nil {
		t.Fatalf("Register with the replies of %d of %d nodes lost: got %s, want an error: no quorum answered", w.quorum, len(wn), reg.ID())
	}
	for _, s := range wn {
		s.lostReply.Store(false)
	}
	r, _ := perNodeBackend(t)
	got, err := r.Entries(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("Entries after a Register that failed: got %v, want none", got)
	}
}

// A Register that failed with its withdrawal missing the nodes where its
// write landed late leaves no second entry beside the candidate's next one,
// nor one after Close.
func TestFailedRegisterCleanedUp(t *testing.T) {
	t.Parallel()
	prioritytest.FailedRegister(t, func(t *testing.T) prioritytest.Broken {
		w, wn := perNodeBackend(t)
		name := name(t)
		// The nodes [quorum-1, n) run the write too late to answer, then
		// drop out: the withdrawal misses them.
		who := "alice"
		for _, s := range wn[w.quorum-1:] {
			s.cutAfter.Store(&who)
		}
		return prioritytest.Broken{
			Backend:  w,
			Election: name,
			Heal: func() {
				for _, s := range wn {
					s.isolated.Store(false)
				}
			},
			Read: func(ctx context.Context) ([]backend.Entry, error) {
				r, rn := perNodeBackend(t)
				for _, s := range rn[:w.quorum-1] {
					s.isolated.Store(true)
				}
				return r.Entries(ctx, name)
			},
		}
	})
}

// perNodeBackend returns a Backend over the test nodes with one node set
// per node, so a test can cut off each node alone.
func perNodeBackend(t *testing.T) (*Backend, []*nodes) {
	t.Helper()
	var sets []*nodes
	var clients []redis.UniversalClient
	for _, a := range testenv.RedisAddrs(t) {
		s := newNodes(t, []string{a})
		sets = append(sets, s)
		clients = append(clients, s.clients[0])
	}
	b, err := New(clients, &Options{RequestTimeout: testRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, sets
}
