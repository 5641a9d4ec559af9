package migrate_test

import (
	"context"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/migrate"
)

// A replica in PhaseBoth holds the election on both stores; its token is
// the old store's while the old store carries no marker.
func Example() {
	ctx := context.Background()
	old, nw := memory.New(), memory.New()
	defer old.Close()
	defer nw.Close()
	b, err := migrate.New(old, nw, migrate.PhaseBoth, &migrate.Options{NewName: "etcd"})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	l, err := b.Campaign(ctx, backend.Candidate{Election: "send-invoices", Identity: "replica-1", TTL: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	s, _ := b.Status(ctx, "send-invoices")
	fmt.Printf("phase %v: old %s, new %s, marked %v, token %d\n", s.Phase, s.Old.Identity, s.New.Identity, s.Marked, l.Token())
	_ = l.Release(ctx)
	// Output: phase both: old replica-1, new replica-1, marked false, token 1
}

// Tokens of the new store carry the next epoch, so each is above every token
// the old store issued.
func ExampleToken() {
	last, _ := migrate.Token(0, 41_000) // the old store's last token
	first, _ := migrate.Token(1, 7)     // the new store's first term
	epoch, native := migrate.SplitToken(first)
	fmt.Println(first > last, epoch, native)
	// Output: true 1 7
}
