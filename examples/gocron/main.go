// Command gocron runs one go-co-op/gocron v2 job on three replicas of a
// service and lets it fire once per tick across them: each replica's
// scheduler asks an elector-backed gocron.Elector whether it leads, and only
// the leader runs the job. Midway the leader resigns; the next tick runs on
// its successor, still once.
//
//	cd examples && go run ./gocron                              # in-memory
//	go run ./gocron -backend etcd://127.0.0.1:23791             # real servers
//
// The adapter is a few lines (leaderOnly below): gocron calls IsLeader
// before each run, and the elector answers from its own state, without a
// request to the backend, because it already knows when its term began and
// steps down before its lease can lapse.
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

	"github.com/go-co-op/gocron/v2"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
	_ "github.com/leaderkit/elector/etcd"      // registers etcd://, etcds://
	_ "github.com/leaderkit/elector/redlock"   // registers redis://, rediss://
	_ "github.com/leaderkit/elector/zookeeper" // registers zk://
)

// leaderOnly is a gocron.Elector backed by an elector.Elector: IsLeader
// returns nil exactly while e leads.
type leaderOnly struct{ e *elector.Elector }

var errNotLeader = errors.New("not the leader")

// IsLeader implements gocron.Elector.
func (l leaderOnly) IsLeader(context.Context) error {
	if l.e.IsLeader() {
		return nil
	}
	return errNotLeader
}

// fire is one run of the job: which replica ran it, with which fencing
// token, at which tick.
type fire struct {
	replica string
	token   uint64
	at      time.Time
}

// run starts three replicas, each with an Elector on one election and a
// gocron scheduler running a job every tick, and returns every run of the
// job after ticks ticks. After half of them the leader resigns.
func run(ctx context.Context, open func(context.Context) (elector.Backend, io.Closer, error), tick time.Duration, ticks int) ([]fire, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		fires []fire
		wg    sync.WaitGroup
	)
	defer wg.Wait()
	electors := make([]*elector.Elector, 3)
	for i := range electors {
		name := fmt.Sprintf("replica-%d", i+1)
		b, closer, err := open(ctx)
		if err != nil {
			return nil, err
		}
		e, err := elector.New(b, "gocron-invoices", &elector.Options{
			Identity: name, TTL: 2 * time.Second, Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			closer.Close()
			return nil, err
		}
		electors[i] = e
		s, err := gocron.NewScheduler(gocron.WithDistributedElector(leaderOnly{e}))
		if err != nil {
			closer.Close()
			return nil, err
		}
		job := func() {
			if t, ok := e.Term(); ok { // the token goes with every write the job makes
				mu.Lock()
				fires = append(fires, fire{name, t.Token, time.Now()})
				mu.Unlock()
			}
		}
		if _, err := s.NewJob(gocron.DurationJob(tick), gocron.NewTask(job)); err != nil {
			closer.Close()
			return nil, err
		}
		wg.Go(func() { _ = e.Run(ctx) })
		s.Start()
		wg.Go(func() {
			<-ctx.Done()
			_ = s.Shutdown()
			closer.Close()
		})
	}
	start := time.Now()
	for n := 1; n <= ticks; n++ {
		if !sleepUntil(ctx, start.Add(time.Duration(n)*tick+tick/2)) {
			return nil, ctx.Err()
		}
		if n == ticks/2 {
			for _, e := range electors {
				if e.IsLeader() {
					_ = e.Resign(ctx)
				}
			}
		}
	}
	cancel()
	wg.Wait()
	return fires, nil
}

// sleepUntil waits until t or ctx ends and reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-time.After(time.Until(t)):
		return true
	case <-ctx.Done():
		return false
	}
}

func main() {
	url := flag.String("backend", "", "backend `URL` (default: in-memory)")
	ticks := flag.Int("ticks", 6, "ticks to run")
	flag.Parse()
	open := func(ctx context.Context) (elector.Backend, io.Closer, error) {
		return backendurl.Open(ctx, *url)
	}
	if *url == "" {
		store := memory.New()
		defer store.Close()
		open = func(context.Context) (elector.Backend, io.Closer, error) {
			p := store.Peer()
			return p, p, nil
		}
	}
	start := time.Now()
	fires, err := run(context.Background(), open, time.Second, *ticks)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocron:", err)
		os.Exit(1)
	}
	for _, f := range fires {
		fmt.Printf("%5s  %s ran the job with token %d\n", f.at.Sub(start).Round(100*time.Millisecond), f.replica, f.token)
	}
	fmt.Printf("%d runs over %d ticks on 3 schedulers\n", len(fires), *ticks)
}
