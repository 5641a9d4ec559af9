// Command singleton is a highly available controller: two replicas run the
// same loop, which does its work only while leading and makes every write
// fenced with the term's token. Then the leader is paused — as a long GC
// pause, a frozen VM or a SIGSTOP would — long enough for its lease to
// lapse; the other replica takes over and writes; and when the old leader
// resumes, the write it was about to make is refused by the store, because
// its token is lower than the newest one the store has accepted.
//
//	cd examples && go run ./singleton
//
// The store here is an in-process stand-in for any store that can compare
// the token in the same atomic step as the write: an SQL UPDATE … WHERE
// fence_token <= $token, an etcd transaction (etcd.Backend.Guard), a
// ZooKeeper multi (zookeeper.Backend.Guard), a Redis script
// (redlock.NewFence).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
)

func main() {
	if _, err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "singleton:", err)
		os.Exit(1)
	}
}

// errStale is the store's answer to a write with an old token.
var errStale = errors.New("refused: stale fencing token")

// store is a resource that remembers the highest token that has written
// and refuses lower ones.
type store struct {
	mu      sync.Mutex
	highest uint64
	value   string
	refused error // the last refusal
}

func (s *store) write(token uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		s.refused = fmt.Errorf("%w: %d < %d", errStale, token, s.highest)
		return s.refused
	}
	s.highest, s.value = token, value
	return nil
}

const ttl = 500 * time.Millisecond

// run plays the scenario and returns the store's final state.
func run() (*store, error) {
	var (
		db      = new(store)
		shared  = memory.New() // the election store both replicas reach
		paused  = make(chan struct{})
		resume  = make(chan struct{})
		written = make(chan string, 16)
		wg      sync.WaitGroup
	)
	defer shared.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	replica := func(name string, b *memory.Backend, pause bool) {
		e, err := elector.New(b, "controller", &elector.Options{
			Identity: name,
			TTL:      ttl,
			Logger:   slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, t elector.Term) {
				fmt.Printf("%s: elected, token %d\n", name, t.Token)
				for i := 1; ; i++ {
					if pause && i == 3 {
						// The process stops here, between deciding to write
						// and writing: no renewals, no checks of ctx.
						b.Isolate()
						close(paused)
						<-resume
						fmt.Printf("%s: resumed; still thinks it leads, writes with token %d\n", name, t.Token)
					} else if ctx.Err() != nil {
						return // the term ended: stop acting as leader
					}
					v := fmt.Sprintf("reconciled by %s, pass %d", name, i)
					if err := db.write(t.Token, v); err != nil {
						fmt.Printf("%s: write %q: %v\n", name, v, err)
						return
					}
					select {
					case written <- fmt.Sprintf("%s: wrote %q with token %d", name, v, t.Token):
					case <-ctx.Done():
						return
					}
					select {
					case <-time.After(50 * time.Millisecond):
					case <-ctx.Done():
						return
					}
				}
			},
			OnRevoked: func(t elector.Term, reason error) {
				fmt.Printf("%s: term %d ended: %v\n", name, t.Token, reason)
			},
		})
		if err != nil {
			panic(err) // the options above are valid
		}
		wg.Go(func() { _ = e.Run(ctx) })
	}

	a := shared.Peer()
	replica("replica-a", a, true)
	for range 2 {
		fmt.Println(<-written)
	}
	<-paused
	fmt.Println("replica-a: paused (its lease lapses after the TTL)")
	replica("replica-b", shared.Peer(), false)
	for range 2 {
		fmt.Println(<-written)
	}
	close(resume) // replica-a wakes up and makes its stale write
	a.Heal()
	for range 2 {
		fmt.Println(<-written)
	}
	cancel()
	wg.Wait()
	db.mu.Lock()
	defer db.mu.Unlock()
	fmt.Printf("store: %q (token %d)\n", db.value, db.highest)
	return db, nil
}
