// Command switch-backend runs the same program on each backend named by a
// URL: three replicas, each leading for three ticks with its fencing token
// and then resigning to the next. Only the URL changes; the code that runs
// while leading (lead, below) does not.
//
//	cd examples && go run ./switch-backend     # mem:// (in-process)
//	go run ./switch-backend redis://127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 \
//	    etcd://127.0.0.1:23791 zk://127.0.0.1:21811?prefix=/elector
//
// (the addresses of the test servers scripts/servers.sh starts). Each driver
// registers its own schemes when imported; the program also registers a
// scheme of its own, mem://, for the in-process backend.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/etcd"      // registers etcd://, etcds://
	_ "github.com/leaderkit/elector/redlock"   // registers redis://, rediss://
	_ "github.com/leaderkit/elector/zookeeper" // registers zk://
)

func main() {
	urls := os.Args[1:]
	if len(urls) == 0 {
		urls = []string{"mem://"}
	}
	mem := memory.New()
	defer mem.Close()
	backendurl.Register("mem", mem.Opener()) // mem:// opens a new client of mem
	for _, u := range urls {
		if err := run(u); err != nil {
			fmt.Fprintln(os.Stderr, "switch-backend:", err)
			os.Exit(1)
		}
	}
}

// lead is the work done while leading, whatever the backend: three ticks,
// each a (here pretend) write carrying the term's token, then hand over.
func lead(ctx context.Context, e *elector.Elector, t elector.Term, start time.Time) {
	for tick := 1; tick <= 3; tick++ {
		fmt.Printf("  %6s  %s  token %-12d tick %d\n", time.Since(start).Round(time.Millisecond), t.Identity, t.Token, tick)
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return // lost the lease: stop at once
		}
	}
	_ = e.Resign(ctx) // hand over at once rather than after a TTL
}

// run runs three replicas on the backend at rawURL until three terms have
// been led.
func run(rawURL string) error {
	fmt.Println(rawURL)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		wg    sync.WaitGroup
		led   atomic.Int32
		terms = make(chan struct{}, 16)
		start = time.Now()
		elec  = fmt.Sprintf("switch-backend-%d", start.UnixNano())
	)
	defer wg.Wait()
	for i := range 3 {
		b, closer, err := backendurl.Open(ctx, rawURL) // one client per replica, as separate processes have
		if err != nil {
			return err
		}
		var e *elector.Elector
		e, err = elector.New(b, elec, &elector.Options{
			Identity: fmt.Sprintf("replica-%d", i+1),
			TTL:      2 * time.Second,
			Logger:   slog.New(slog.DiscardHandler),
			OnElected: func(ctx context.Context, t elector.Term) {
				if led.Add(1) > 3 {
					return // enough for the demo; run is stopping
				}
				lead(ctx, e, t, start)
				terms <- struct{}{}
			},
		})
		if err != nil {
			closer.Close()
			return err
		}
		wg.Go(func() {
			defer closer.Close()
			_ = e.Run(ctx)
		})
	}
	for range 3 {
		<-terms
	}
	cancel()
	return nil
}
