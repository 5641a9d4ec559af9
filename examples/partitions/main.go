// Command partitions shares the 12 partitions of a job queue among three
// workers: each partition is worked by exactly one worker at a time, and
// every job it completes is recorded with the partition's fencing token.
// Then one worker is killed — a crash, not a shutdown: its leases stay at
// the store until their TTL runs out — and the two others take its
// partitions over. The table of who owns what is printed before and after.
//
//	cd examples && go run ./partitions
//
// The workers share an in-process store (backend/memory); on Redis, etcd,
// ZooKeeper or Kubernetes Leases each would construct its driver instead,
// and nothing else would change.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/partition"
)

const (
	group      = "jobs"
	partitions = 12
	ttl        = time.Second
)

func main() {
	if _, _, err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "partitions:", err)
		os.Exit(1)
	}
}

// ledger is the job queue's result store: it accepts a completed job for a
// partition only with a token at least the highest that partition has seen.
type ledger struct {
	mu      sync.Mutex
	highest map[int]uint64
	done    map[int]int // jobs completed per partition
	refused int
}

func (l *ledger) complete(p int, token uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if token < l.highest[p] {
		l.refused++
		return false
	}
	l.highest[p] = token
	l.done[p]++
	return true
}

// worker runs one member of the group on b until ctx ends.
func worker(ctx context.Context, b *memory.Backend, name string, db *ledger) (func() error, error) {
	a, err := partition.New(b, group, partitions, &partition.Options{
		Identity: name,
		TTL:      ttl,
		Logger:   slog.New(slog.DiscardHandler),
		OnAssigned: func(ctx context.Context, p partition.Assignment) {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return // the partition moved or its lease ended: stop working it
				case <-t.C:
					db.complete(p.Partition, p.Token) // one job, fenced by the token
				}
			}
		},
	})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() error { return <-done }, nil
}

// run plays the scenario, printing to out, and returns the tables read
// before and after the crash.
func run(out *os.File) (before, after *partition.Table, err error) {
	store := memory.New() // the server every worker reaches
	defer store.Close()
	db := &ledger{highest: map[int]uint64{}, done: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	names := []string{"worker-a", "worker-b", "worker-c"}
	backends := map[string]*memory.Backend{}
	var waits []func() error
	for _, name := range names {
		backends[name] = store.Peer()
		wait, err := worker(ctx, backends[name], name, db)
		if err != nil {
			return nil, nil, err
		}
		waits = append(waits, wait)
	}
	defer func() {
		cancel()
		for _, w := range waits {
			_ = w()
		}
	}()

	began := time.Now()
	if before, err = settled(ctx, store, 3); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "three workers own all %d partitions after %v:\n", partitions, time.Since(began).Round(100*time.Millisecond))
	print(out, before)

	backends["worker-b"].Crash() // the process dies: no release, no goodbye
	crashed := time.Now()
	fmt.Fprintf(out, "\nworker-b crashed; its leases lapse after the TTL (%v)\n\n", ttl)
	if after, err = settled(ctx, store, 2); err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "worker-a and worker-c own all %d partitions %v after the crash:\n", partitions, time.Since(crashed).Round(100*time.Millisecond))
	print(out, after)
	db.mu.Lock()
	fmt.Fprintf(out, "\njobs completed: %d; completions refused for a stale token: %d\n", sum(db.done), db.refused)
	db.mu.Unlock()
	return before, after, nil
}

// settled reads the table until members workers are listed and every
// partition is owned by the member placement puts it on.
func settled(ctx context.Context, store *memory.Backend, members int) (*partition.Table, error) {
	deadline := time.Now().Add(10 * ttl)
	for {
		t, err := partition.ReadTable(ctx, store, group, partitions)
		if err != nil {
			return nil, err
		}
		if len(t.Members) == members && done(t) {
			return t, nil
		}
		if time.Now().After(deadline) {
			return t, fmt.Errorf("partitions not settled within %v", 10*ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func done(t *partition.Table) bool {
	for _, o := range t.Partitions {
		if o.Owner == "" || o.Owner != o.Placed {
			return false
		}
	}
	return true
}

func print(out *os.File, t *partition.Table) {
	fmt.Fprintln(out, "  partition  owner     token")
	for _, o := range t.Partitions {
		fmt.Fprintf(out, "  %9d  %-8s  %5d\n", o.Partition, o.Owner, o.Token)
	}
	for _, m := range t.Members {
		fmt.Fprintf(out, "  %s owns %d\n", m.Identity, m.Owned)
	}
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
