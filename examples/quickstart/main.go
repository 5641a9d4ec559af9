// Command quickstart shows elector at work with no servers to install: it
// starts an embedded etcd in a temporary directory, runs three candidates
// for one election, stops the leader (a graceful hand-over), then crashes
// the next one (a failover by lease expiry), printing each term with its
// fencing token and timing both failovers.
//
//	cd examples && go run ./quickstart
//
// Flags select a real store instead:
//
//	go run ./quickstart -etcd 127.0.0.1:2379
//	go run ./quickstart -redis 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003
//	go run ./quickstart -zk 127.0.0.1:2181
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/leaderkit/elector"
)

func main() {
	etcdAddrs := flag.String("etcd", "", "use the etcd cluster at `host:port,...` instead of an embedded etcd")
	redisAddrs := flag.String("redis", "", "use Redlock over the Redis masters at `host:port,...`")
	zkAddrs := flag.String("zk", "", "use the ZooKeeper ensemble at `host:port,...`")
	ttl := flag.Duration("ttl", 2*time.Second, "lease `TTL`: how long a crashed leader blocks the election")
	verbose := flag.Bool("v", false, "also print the electors' own logs (debug level) on stderr")
	flag.Parse()
	logger := slog.New(slog.DiscardHandler) // the program prints the events itself
	if *verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := run(*etcdAddrs, *redisAddrs, *zkAddrs, *ttl, logger); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// event is something that happened to a candidate.
type event struct {
	at     time.Time
	who    string
	what   string // "elected", "stepped down" (OnElected's ctx ended) or "revoked"
	term   elector.Term
	reason error // for "revoked"
}

func run(etcdAddrs, redisAddrs, zkAddrs string, ttl time.Duration, logger *slog.Logger) error {
	start := time.Now()
	st, err := openStore(etcdAddrs, redisAddrs, zkAddrs, ttl)
	if err != nil {
		return err
	}
	defer st.close()
	const election = "quickstart"
	fmt.Printf("store: %s (ready in %v)\n", st.desc, time.Since(start).Round(time.Millisecond))
	fmt.Printf("three candidates campaign for %q, TTL %v\n\n", election, ttl)

	events := make(chan event, 16)
	names := []string{"alice", "bob", "carol"}
	members := make(map[string]*member)
	stops := make(map[string]context.CancelFunc)
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range stops {
			stop()
		}
		wg.Wait()
		for _, m := range members {
			m.close()
		}
	}()
	for i, name := range names {
		m, err := st.join()
		if err != nil {
			return err
		}
		members[name] = m
		if i == 0 {
			if err := checkStore(context.Background(), m); err != nil {
				return err
			}
		}
		e, err := elector.New(m.b, election, &elector.Options{
			Identity: name,
			TTL:      ttl,
			Logger:   logger,
			OnElected: func(ctx context.Context, t elector.Term) {
				events <- event{at: time.Now(), who: name, what: "elected", term: t}
				<-ctx.Done() // lead until the term ends: stop acting now
				events <- event{at: time.Now(), who: name, what: "stepped down", term: t}
			},
			OnRevoked: func(t elector.Term, reason error) {
				events <- event{at: time.Now(), who: name, what: "revoked", term: t, reason: reason}
			},
		})
		if err != nil {
			return err
		}
		ctx, stop := context.WithCancel(context.Background())
		stops[name] = stop
		wg.Go(func() { _ = e.Run(ctx) })
	}

	// steppedDown is when each term's OnElected saw its ctx end.
	steppedDown := make(map[uint64]time.Time)
	// next prints events until a candidate is elected, and returns that.
	next := func() event {
		for {
			ev := <-events
			printEvent(start, ev)
			switch ev.what {
			case "elected":
				return ev
			case "stepped down":
				steppedDown[ev.term.Token] = ev.at
			}
		}
	}
	first := next()

	fmt.Printf("\nstopping %s (its Run returns and releases the lease)\n", first.who)
	stopped := time.Now()
	stops[first.who]()
	second := next()
	fmt.Printf("graceful failover: %v from stopping %s to %s's election\n",
		second.at.Sub(stopped).Round(100*time.Microsecond), first.who, second.who)

	if crash := members[second.who].crash; crash == nil {
		fmt.Println("\n(no crash step: this driver owns its connection)")
	} else {
		fmt.Printf("\ncrashing %s (its connection is closed: no release, no renewal)\n", second.who)
		crashed := time.Now()
		crash()
		third := next()
		fmt.Printf("crash failover: %v from the crash to %s's election (TTL %v); token %d > %d\n",
			third.at.Sub(crashed).Round(time.Millisecond), third.who, ttl, third.term.Token, second.term.Token)
		if at, ok := steppedDown[second.term.Token]; ok {
			fmt.Printf("%s, cut off, had stepped down %v before %s was elected\n",
				second.who, third.at.Sub(at).Round(time.Millisecond), third.who)
		}
	}

	fmt.Println("\nstopping everyone")
	for _, stop := range stops {
		stop()
	}
	wg.Wait()
	close(events)
	for ev := range events {
		printEvent(start, ev)
	}
	fmt.Println("done")
	return nil
}

// printEvent prints one event on one line.
func printEvent(start time.Time, ev event) {
	line := fmt.Sprintf("%7.3fs  %-5s %-12s token %d", ev.at.Sub(start).Seconds(), ev.who, ev.what, ev.term.Token)
	switch {
	case ev.reason == nil:
	case errors.Is(ev.reason, context.Canceled):
		line += ": Run stopped"
	case errors.Is(ev.reason, elector.ErrLeaseLost):
		line += ": lease lost"
	default:
		line += ": " + ev.reason.Error()
	}
	fmt.Println(line)
}
