package kube

import (
	"context"
	"testing"
	"time"
)

// Deadline answers at once while a Renew waits for an apiserver that does
// not answer: the portable layer reads it to decide when to step down, and
// must not wait for the renewal that is late.
func TestDeadlineDoesNotWaitForRenew(t *testing.T) {
	s := testServer(t)
	p := newProxy(t, s.addr())
	t.Cleanup(p.Close)
	b, err := New(s.via(t, p.Addr()), s.ns, &Options{RequestTimeout: 2 * time.Second})
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
	if took := time.Since(start); took > 100*time.Millisecond {
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
