// Command cron-once is the invoices scenario: five replicas of a service
// each have the same cron line, so the job fires on all five at once, and
// the invoices must go out exactly once. Each firing, every replica calls
// [once]; one wins the election and sends the invoices, the others see a
// leader and skip.
//
//	cd examples && go run ./cron-once                   # in-memory backend
//	go run ./cron-once -backend etcd://127.0.0.1:2379   # or redis://…, zk://…
//
// A shell job gets the same from the elect command:
//
//	*/5 * * * * elect run --once --backend etcd://e1,e2,e3 --election invoices -- send-invoices
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/etcd"      // registers etcd://, etcds://
	_ "github.com/leaderkit/elector/redlock"   // registers redis://, rediss://
	_ "github.com/leaderkit/elector/zookeeper" // registers zk://
)

func main() {
	url := flag.String("backend", os.Getenv("ELECT_BACKEND"), "backend `URL` (default: in-memory)")
	replicas := flag.Int("replicas", 5, "replicas whose cron fires the job")
	firings := flag.Int("firings", 3, "times cron fires")
	flag.Parse()
	if err := run(*url, *replicas, *firings); err != nil {
		fmt.Fprintln(os.Stderr, "cron-once:", err)
		os.Exit(1)
	}
}

const (
	wait = 1 * time.Second // how long a replica waits to be elected
	hold = 2 * time.Second // how long the winner keeps the lease after the job (>= wait)
)

func run(url string, replicas, firings int) error {
	mem := memory.New()
	defer mem.Close()
	open := func(ctx context.Context) (elector.Backend, io.Closer, error) {
		if url == "" {
			p := mem.Peer() // another process on the same store
			return p, p, nil
		}
		return backendurl.Open(ctx, url)
	}
	election := fmt.Sprintf("send-invoices-%d", time.Now().UnixNano())
	for firing := 1; firing <= firings; firing++ {
		var (
			mu   sync.Mutex
			sent []string // the invoice batches that went out
			wg   sync.WaitGroup
			errs = make(chan error, replicas)
			fire = make(chan struct{})
		)
		for i := range replicas {
			wg.Go(func() {
				b, closer, err := open(context.Background())
				if err != nil {
					errs <- err
					return
				}
				defer closer.Close()
				<-fire // cron fires on every replica at the same moment
				id := fmt.Sprintf("replica-%d", i+1)
				_, err = once(context.Background(), b, election, id, func(ctx context.Context, t elector.Term) {
					mu.Lock()
					defer mu.Unlock()
					sent = append(sent, fmt.Sprintf("%s (token %d)", id, t.Token))
				})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
			})
		}
		close(fire)
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		fmt.Printf("firing %d: invoices sent %d time(s): %v\n", firing, len(sent), sent)
		if len(sent) != 1 {
			return fmt.Errorf("firing %d: invoices sent %d times, want exactly once", firing, len(sent))
		}
	}
	return nil
}

// once runs job if this replica wins the election within wait, and then
// keeps the lease for hold after job returns, so that replicas whose cron
// fires a little later (or that were still waiting) find it taken. A
// replica that sees another leader gives up at once. It reports whether
// job ran. job's ctx ends if the lease is lost meanwhile.
func once(ctx context.Context, b elector.Backend, election, identity string, job func(context.Context, elector.Term)) (ran bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		decided bool // elected, or gave up
	)
	decide := func() bool { // the first decision wins
		mu.Lock()
		defer mu.Unlock()
		first := !decided
		decided = true
		return first
	}
	e, err := elector.New(b, election, &elector.Options{
		Identity: identity,
		TTL:      5 * time.Second,
		Logger:   slog.New(slog.DiscardHandler),
		OnElected: func(tctx context.Context, t elector.Term) {
			defer cancel() // then Run releases the lease and returns
			if !decide() {
				return
			}
			ran = true
			job(tctx, t)
			select {
			case <-time.After(hold):
			case <-tctx.Done():
			}
		},
		OnLeaderChange: func(h elector.Holder) {
			if !h.IsZero() && h.Identity != identity && decide() {
				cancel() // another replica leads: it runs the job
			}
		},
	})
	if err != nil {
		return false, err
	}
	timer := time.AfterFunc(wait, func() {
		if decide() {
			cancel()
		}
	})
	defer timer.Stop()
	if err := e.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return ran, err
	}
	return ran, nil
}
