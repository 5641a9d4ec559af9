package integration_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/migrate"
	"github.com/leaderkit/elector/redlock"
)

// fakeLease is a lease the marker is told the caller holds, with any token.
type fakeLease struct {
	backend.Lease
	token uint64
}

func (f fakeLease) Token() uint64       { return f.token }
func (f fakeLease) Deadline() time.Time { return time.Now().Add(time.Minute) }

// TestRedisMarker: the marker replaces only the lease it is given, is
// idempotent, blocks redlock candidates, and Unmark frees the election.
// Not t.Parallel: its first Campaign fails the test if three of five nodes
// miss the 500 ms RequestTimeout, as they did beside other tests.
func TestRedisMarker(t *testing.T) {
	rb := redisSide(t)(t).(*redlock.Backend)
	defer rb.Close()
	marker := migrate.Marker(rb)
	ctx := redlockCtx(t)
	election := migrateName("redis-marker")
	l, err := rb.Campaign(ctx, backend.Candidate{Election: election, Identity: "holder", TTL: migrateTTL})
	if err != nil {
		t.Fatal(err)
	}
	if err := marker.Mark(ctx, election, fakeLease{token: l.Token() + 1}, "migrated-to-x"); err == nil {
		t.Error("Mark with another lease's token: got nil; want an error, the holder's key left alone")
	}
	if h, err := rb.Leader(ctx, election); err != nil || h.Identity != "holder" {
		t.Errorf("holder after a refused Mark: got %+v, %v; want holder", h, err)
	}
	for range 2 { // idempotent
		if err := marker.Mark(ctx, election, l, "migrated-to-x"); err != nil {
			t.Fatal(err)
		}
	}
	if h, err := rb.Leader(ctx, election); err != nil || !migrate.IsMarker(h) || h.Token != l.Token() {
		t.Errorf("holder after Mark: got %+v, %v; want the marker with token %d", h, err, l.Token())
	}
	if err := l.Renew(ctx); !errors.Is(err, backend.ErrLost) {
		t.Errorf("Renew of the marked lease: got %v; want ErrLost", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*migrateTTL)
	defer cancel()
	if _, err := rb.Campaign(wctx, backend.Candidate{Election: election, Identity: "late", TTL: migrateTTL}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("campaign behind the marker for 2 TTLs: got %v; want it still waiting", err)
	}
	if _, err := migrate.Cleanup(ctx, marker, election); err != nil {
		t.Fatal(err)
	}
	l2, err := rb.Campaign(ctx, backend.Candidate{Election: election, Identity: "after", TTL: migrateTTL})
	if err != nil {
		t.Fatalf("campaign after Cleanup: %v", err)
	}
	_ = l2.Release(ctx)
}
