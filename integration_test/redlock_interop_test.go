package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"

	"github.com/leaderkit/elector/backend"
)

// TestRedlockRedsyncInterop: an elector leader and a redsync mutex on the
// same five masters and the same key exclude each other both ways (the
// Backend uses NoPrefix, so its lock key is the bare name). Not t.Parallel:
// each redsync attempt gets 250 ms (expiry 5 s × its timeout factor 0.05)
// per node, which other tests' load at once would eat.
func TestRedlockRedsyncInterop(t *testing.T) {
	rl := newRedlock(t)
	rs := newRedlockRedsync(t)
	ctx := redlockCtx(t)
	name := redlockName("interop")
	c := backend.Candidate{Election: name, Identity: "elector", TTL: 2 * time.Second}

	// redsync holds: elector waits.
	m := rs.NewMutex(name, redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("redsync Lock on a free key: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	l, err := rl.Campaign(short, c)
	cancel()
	if err == nil {
		_ = l.Release(ctx)
		t.Fatal("elector Campaign while redsync holds the key: got a lease, want none")
	}
	if err != context.DeadlineExceeded {
		t.Fatalf("elector Campaign while redsync holds the key: got %v, want context.DeadlineExceeded", err)
	}
	h, err := rl.Leader(ctx, name)
	if err != nil || h.Identity != "" || h.Token != 0 {
		t.Errorf("Leader while redsync holds the key: got %+v, %v; want an anonymous holder", h, err)
	}
	if ok, err := m.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync Unlock: %v, %v", ok, err)
	}

	// elector holds: redsync is refused.
	l, err = rl.Campaign(ctx, c)
	if err != nil {
		t.Fatalf("elector Campaign after redsync's Unlock: %v", err)
	}
	m2 := rs.NewMutex(name, redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	err = m2.LockContext(ctx)
	var taken *redsync.ErrTaken
	if err == nil {
		t.Fatal("redsync Lock while the elector leader holds the key: got the lock, want it refused")
	}
	if !errors.As(err, &taken) && !errors.Is(err, redsync.ErrFailed) {
		t.Errorf("redsync Lock while held: got %v, want ErrTaken or ErrFailed", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("elector Renew after redsync's refused attempt: %v, want nil: redsync's cleanup must not touch our keys", err)
	}

	// elector releases: redsync gets it.
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m3 := rs.NewMutex(name, redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	if err := m3.LockContext(ctx); err != nil {
		t.Fatalf("redsync Lock after the elector leader released: %v", err)
	}
	if ok, err := m3.UnlockContext(ctx); !ok || err != nil {
		t.Fatalf("redsync Unlock: %v, %v", ok, err)
	}
}
