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

// election is the one election the candidates campaign for.
const election = "quickstart"

func run(etcdAddrs, redisAddrs, zkAddrs string, ttl time.Duration, logger *slog.Logger) error {
	start := time.Now()
	st, err := openStore(etcdAddrs, redisAddrs, zkAddrs, ttl)
	if err != nil {
		return err
	}
	defer st.close()
	fmt.Printf("store: %s (ready in %v)\n", st.desc, time.Since(start).Round(time.Millisecond))
	fmt.Printf("three candidates campaign for %q, TTL %v\n\n", election, ttl)

	d := &demo{
		start:       start,
		ttl:         ttl,
		events:      make(chan event, 16),
		members:     make(map[string]*member),
		stops:       make(map[string]context.CancelFunc),
		steppedDown: make(map[uint64]time.Time),
	}
	defer d.cleanUp()
	for i, name := range []string{"alice", "bob", "carol"} {
		if err := d.startCandidate(st, name, i == 0, logger); err != nil {
			return err
		}
	}
	first := d.next()
	second := d.stopLeader(first)
	d.crashLeader(second)
	d.stopEveryone()
	return nil
}

// demo is the state of one run: the candidates and what they reported.
type demo struct {
	start  time.Time
	ttl    time.Duration
	events chan event
	// members and stops are each candidate's connection and the stop of
	// its Run; wg waits for the Runs.
	members map[string]*member
	stops   map[string]context.CancelFunc
	wg      sync.WaitGroup
	// steppedDown is when each term's OnElected saw its ctx end.
	steppedDown map[uint64]time.Time
}

// startCandidate joins the store as name and runs an elector for it;
// check first checks the store through its connection.
func (d *demo) startCandidate(st *store, name string, check bool, logger *slog.Logger) error {
	m, err := st.join()
	if err != nil {
		return err
	}
	d.members[name] = m
	if check {
		if err := checkStore(context.Background(), m); err != nil {
			return err
		}
	}
	e, err := elector.New(m.b, election, &elector.Options{
		Identity: name,
		TTL:      d.ttl,
		Logger:   logger,
		OnElected: func(ctx context.Context, t elector.Term) {
			d.events <- event{at: time.Now(), who: name, what: "elected", term: t}
			<-ctx.Done() // lead until the term ends: stop acting now
			d.events <- event{at: time.Now(), who: name, what: "stepped down", term: t}
		},
		OnRevoked: func(t elector.Term, reason error) {
			d.events <- event{at: time.Now(), who: name, what: "revoked", term: t, reason: reason}
		},
	})
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	d.stops[name] = stop
	d.wg.Go(func() { _ = e.Run(ctx) })
	return nil
}

// next prints events until a candidate is elected, and returns that.
func (d *demo) next() event {
	for {
		ev := <-d.events
		printEvent(d.start, ev)
		switch ev.what {
		case "elected":
			return ev
		case "stepped down":
			d.steppedDown[ev.term.Token] = ev.at
		}
	}
}

// stopLeader stops the leader's Run (a graceful hand-over) and returns the
// next election.
func (d *demo) stopLeader(first event) event {
	fmt.Printf("\nstopping %s (its Run returns and releases the lease)\n", first.who)
	stopped := time.Now()
	d.stops[first.who]()
	second := d.next()
	fmt.Printf("graceful failover: %v from stopping %s to %s's election\n",
		second.at.Sub(stopped).Round(100*time.Microsecond), first.who, second.who)
	return second
}

// crashLeader crashes the leader (a failover by lease expiry), if its
// driver can, and waits for the next election.
func (d *demo) crashLeader(second event) {
	crash := d.members[second.who].crash
	if crash == nil {
		fmt.Println("\n(no crash step: zookeeper.New dials its own connections; to crash a member, give it an Options.Dialer whose connections the demo can close, or run with -etcd or -redis)")
		return
	}
	fmt.Printf("\ncrashing %s (its connection is closed: no release, no renewal)\n", second.who)
	crashed := time.Now()
	crash()
	third := d.next()
	fmt.Printf("crash failover: %v from the crash to %s's election (TTL %v); token %d > %d\n",
		third.at.Sub(crashed).Round(time.Millisecond), third.who, d.ttl, third.term.Token, second.term.Token)
	if at, ok := d.steppedDown[second.term.Token]; ok {
		fmt.Printf("%s, cut off, had stepped down %v before %s was elected\n",
			second.who, third.at.Sub(at).Round(time.Millisecond), third.who)
	}
}

// stopEveryone stops every Run and prints the events left.
func (d *demo) stopEveryone() {
	fmt.Println("\nstopping everyone")
	for _, stop := range d.stops {
		stop()
	}
	d.wg.Wait()
	close(d.events)
	for ev := range d.events {
		printEvent(d.start, ev)
	}
	fmt.Println("done")
}

// cleanUp stops every Run still going and closes every connection.
func (d *demo) cleanUp() {
	for _, stop := range d.stops {
		stop()
	}
	d.wg.Wait()
	for _, m := range d.members {
		m.close()
	}
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
