package kube

import (
	"context"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testproxy"
)

// Deadline answers at once while a Renew waits for an apiserver that does
// not answer: the portable layer reads it to decide when to step down, and
// must not wait for the renewal that is late.
func TestDeadlineDoesNotWaitForRenew(t *testing.T) {
	t.Parallel() // it stalls a proxy of its own, not the apiserver
	s := testServer(t)
	p := testproxy.New(t, s.addr())
	// Deadline is allowed 5 s on a loaded machine; one that waited for the
	// Renew would take the request's whole RequestTimeout, twice that.
	b, err := New(s.via(t, p.Addr()), s.ns, &Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	name := testName(t)
	l := mustCampaign(t, b, cand(name, "alice"))
	want := l.Deadline()
	p.Stall()
	// A first request finds the connection Stall closed; later ones dial
	// again and hang.
	flush, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, _ = b.Leader(flush, name)
	cancel()
	renewed := make(chan error, 1)
	go func() { renewed <- l.Renew(context.Background()) }()
	// Renew holds the lease's write lock until the request times out.
	for l.mu.TryLock() { // Renew has not taken it yet
		l.mu.Unlock()
		select {
		case err := <-renewed:
			t.Fatalf("Renew returned %v before the stalled request could time out", err)
		case <-time.After(time.Millisecond):
		}
	}
	start := time.Now()
	got := l.Deadline()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Deadline took %v while a Renew waited on the apiserver, want it at once", took)
	}
	if !got.Equal(want) {
		t.Errorf("Deadline moved by %v while nothing was acknowledged", got.Sub(want))
	}
	if err := <-renewed; err == nil {
		t.Errorf("Renew through a stalled apiserver: got nil, want an error")
	}
	p.Heal()
}

// After a renewal whose outcome is unknown (the apiserver may have applied
// it and the answer been lost), the Deadline of the next successful
// renewal counts from the unknown one's send time: a client-go candidate,
// which sees renewTime in whole seconds, may have first seen that second's
// record then.
func TestDeadlineAfterUnknownRenewal(t *testing.T) {
	t.Parallel() // it stalls a proxy of its own; a 30 s lease
	s := testServer(t)
	p := testproxy.New(t, s.addr())
	b, err := New(s.via(t, p.Addr()), s.ns, &Options{RequestTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	name := testName(t)
	// Long enough that the lease outlives the stalled renewal and the
	// next, on a loaded machine too.
	const ttl = 30 * time.Second
	l := mustCampaign(t, b, backendCand(name, "alice", ttl))
	p.Stall()
	flush, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, _ = b.Leader(flush, name) // meets the connection Stall closed
	cancel()
	if err := l.Renew(context.Background()); err == nil {
		t.Fatal("Renew through a stalled apiserver: got nil, want an error")
	}
	failed := time.Now() // the unknown renewal was sent before this
	p.Heal()
	if err := l.Renew(testCtx(t)); err != nil {
		t.Fatalf("Renew after healing: %v", err)
	}
	limit := backend.LeaseDeadline(failed, ttl, backend.DefaultDriftFactor)
	if d := l.Deadline(); d.After(limit) {
		t.Errorf("Deadline after a renewal of unknown outcome: %v after that renewal's send time plus the TTL less drift, want at most that: client-go may have seen its record first", d.Sub(limit))
	}
}
