package redlock_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/redlock"
)

// An elector over five independent Redis masters; the leader writes to a
// Redis key only through a Fence, so a stale leader's late write is refused.
// (No output: it needs the servers.)
func ExampleNew() {
	var clients []redis.UniversalClient
	for _, addr := range []string{"r1:6379", "r2:6379", "r3:6379", "r4:6379", "r5:6379"} {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close() // New does not take ownership of the clients
		clients = append(clients, c)
	}
	b, err := redlock.New(clients, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	store := redis.NewClient(&redis.Options{Addr: "app-redis:6379"})
	defer store.Close()
	fence := redlock.NewFence(store, "invoices:fence")
	e, err := elector.New(b, "send-invoices", &elector.Options{
		TTL: 10 * time.Second,
		OnElected: func(ctx context.Context, t elector.Term) {
			// Refused with an error wrapping redlock.ErrStaleToken if a
			// newer leader has written since.
			if err := fence.Set(ctx, t.Token, "invoices:last-run", time.Now().String(), 0); err != nil {
				log.Print(err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = e.Run(context.Background())
}
