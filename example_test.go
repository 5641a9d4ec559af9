package elector_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
)

// Two replicas campaign for one election; the leader resigns and the other
// takes over at once with a higher fencing token.
func Example() {
	store := memory.New() // in production: redlock.New, etcd.New or zookeeper.New
	events := make(chan string)
	replica := func(id string) *elector.Elector {
		e, err := elector.New(store.Peer(), "send-invoices", &elector.Options{
			Identity: id,
			TTL:      30 * time.Second,
			Logger:   slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, t elector.Term) {
				events <- fmt.Sprintf("%s elected, token %d", t.Identity, t.Token)
				<-ctx.Done() // lead until the term ends
			},
			OnRevoked: func(t elector.Term, reason error) {
				events <- fmt.Sprintf("%s revoked: resigned=%v", t.Identity, errors.Is(reason, elector.ErrResigned))
			},
		})
		if err != nil {
			panic(err)
		}
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	alice, bob := replica("alice"), replica("bob")
	done := make(chan error, 2)
	go func() { done <- alice.Run(ctx) }()
	fmt.Println(<-events)
	go func() { done <- bob.Run(ctx) }()

	resigned := make(chan error, 1)
	go func() { resigned <- alice.Resign(ctx) }()
	// The two events come from two goroutines: print them in a fixed order.
	got := map[string]bool{<-events: true, <-events: true}
	fmt.Println(got["alice revoked: resigned=true"], got["bob elected, token 2"])
	fmt.Println("resign:", <-resigned)

	h, _ := alice.Leader(ctx)
	fmt.Printf("leader: %s, token %d\n", h.Identity, h.Token)
	cancel()
	fmt.Println(<-events)
	fmt.Println(<-done, <-done)
	// Output:
	// alice elected, token 1
	// true true
	// resign: <nil>
	// leader: bob, token 2
	// bob revoked: resigned=false
	// context canceled context canceled
}

// New reports invalid options with the field and the allowed range.
func ExampleNew_invalidOptions() {
	_, err := elector.New(memory.New(), "jobs", &elector.Options{TTL: 2 * time.Second, RenewInterval: 2 * time.Second})
	fmt.Println(err)
	_, err = elector.New(memory.New(), "jobs//eu", nil)
	fmt.Println(err)
	// Output:
	// elector: Options.RenewInterval 2s leaves no time to renew; want below TTL - SafetyMargin = 2s - 400ms = 1.6s
	// elector: invalid request: election name "jobs//eu" has an empty segment (leading, trailing or doubled '/')
}

// A fenced write: the resource remembers the highest token it has accepted
// and refuses older ones, so a paused ex-leader's late write does no harm.
func ExampleTerm_fencing() {
	var highest uint64
	write := func(t elector.Term, v string) error {
		if t.Token < highest {
			return fmt.Errorf("refused %q: token %d < %d", v, t.Token, highest)
		}
		highest = t.Token
		return nil
	}
	old := elector.Term{Election: "jobs", Identity: "alice", Token: 7}
	cur := elector.Term{Election: "jobs", Identity: "bob", Token: 8}
	fmt.Println(write(old, "a"), write(cur, "b"))
	fmt.Println(write(old, "late write from a paused ex-leader"))
	// Output:
	// <nil> <nil>
	// refused "late write from a paused ex-leader": token 7 < 8
}

// A replica of a higher priority joins while a lower one leads: the leader
// hands over to it once it has led MinTerm (here at once), with the reason
// ErrPreempted, and the preferred replica is elected next.
func ExampleOptions_priority() {
	store := memory.New()
	elected, revoked := make(chan string), make(chan string)
	replica := func(id string, priority int) *elector.Elector {
		e, err := elector.New(store.Peer(), "send-invoices", &elector.Options{
			Identity: id,
			Priority: priority,
			TTL:      30 * time.Second,
			Logger:   slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, t elector.Term) {
				elected <- fmt.Sprintf("%s elected, token %d", t.Identity, t.Token)
				<-ctx.Done()
			},
			OnRevoked: func(t elector.Term, reason error) {
				revoked <- fmt.Sprintf("%s revoked: preempted=%v", t.Identity, errors.Is(reason, elector.ErrPreempted))
			},
		})
		if err != nil {
			panic(err)
		}
		return e
	}
	ctx, cancel := context.WithCancel(context.Background())
	old, upgraded := replica("v1", 1), replica("v2", 2)
	done := make(chan error, 2)
	go func() { done <- old.Run(ctx) }()
	fmt.Println(<-elected)
	go func() { done <- upgraded.Run(ctx) }()
	fmt.Println(<-revoked)
	fmt.Println(<-elected)
	cancel()
	fmt.Println(<-revoked)
	<-done
	<-done
	// Output:
	// v1 elected, token 1
	// v1 revoked: preempted=true
	// v2 elected, token 2
	// v2 revoked: preempted=false
}
