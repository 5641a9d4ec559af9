package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// Two clients of one in-memory store contend for an election as two
// processes would: the second is elected once the first releases, with a
// higher token.
func Example() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	alice, bob := store, store.Peer()

	la, _ := alice.Campaign(ctx, backend.Candidate{Election: "jobs", Identity: "alice", TTL: time.Minute})
	won := make(chan backend.Lease)
	go func() {
		lb, _ := bob.Campaign(ctx, backend.Candidate{Election: "jobs", Identity: "bob", TTL: time.Minute})
		won <- lb
	}()
	h, _ := alice.Leader(ctx, "jobs")
	fmt.Println("leader:", h.Identity, "token", h.Token)
	_ = la.Release(ctx)
	lb := <-won
	fmt.Println("after release:", "token", lb.Token())
	// Output:
	// leader: alice token 1
	// after release: token 2
}
