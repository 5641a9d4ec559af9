// Command candidate is one candidate process of the chaos campaign (see
// package github.com/leaderkit/elector/integration_test/chaos): it runs an
// [elector.Elector] on the driver named by -driver and, while it leads,
// writes to the fencing store at -fence with its term's token every
// -write-every, resigning after a random time so that terms hand over often.
// With -url it opens the backend from a URL instead (a migrate+<phase>://
// URL in a migrate campaign, whose events carry -key); with -partitions it
// is a member of partition group -election instead, leaving and joining
// again now and then, and keys each partition's events p<N>. With
// -priority it campaigns with that priority and -min-term, never resigns,
// and leaves (a "leave" event, then exit 0) after -member-min to
// -member-max; its start event's note is "priority N".
//
// It prints one JSON object per line on standard output for every
// transition, stamped with CLOCK_MONOTONIC in nanoseconds (shared by every
// process on the machine):
//
//	{"mono":123,"proc":"s1g0","kind":"elected","token":42}
//	{"mono":456,"proc":"s1g0","kind":"stepdown","token":42,"note":"..."}
//
// It exits 0 after SIGTERM or SIGINT, once its term (if any) has ended,
// and after reporting a "refused" event when the backend refuses it for
// good (an error wrapping backend.ErrInvalid from Campaign: a replica in
// phase old after the migration's marker).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backendurl"
	"github.com/leaderkit/elector/etcd"
	_ "github.com/leaderkit/elector/kube"  // registers kube:// for -url
	"github.com/leaderkit/elector/migrate" // also registers migrate+<phase>:// for -url
	"github.com/leaderkit/elector/redlock"
	"github.com/leaderkit/elector/zookeeper"
)

// event mirrors chaos.Event.
type event struct {
	Mono  int64  `json:"mono"`
	Proc  string `json:"proc"`
	Kind  string `json:"kind"`
	Token uint64 `json:"token,omitempty"`
	Note  string `json:"note,omitempty"`
	Key   string `json:"key,omitempty"`
}

var outMu sync.Mutex

func emit(ev event) {
	b, _ := json.Marshal(ev)
	b = append(b, '\n')
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = os.Stdout.Write(b)
}

func mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// config is the command line.
type config struct {
	driver, url, election, proc, fence, key string
	addrs                                   []string
	ttl, writeEvery, termMin, termMax       time.Duration
	requestTimeout, minTerm                 time.Duration
	partitions, priority                    int
	memberMin, memberMax                    time.Duration
	cleanup                                 bool
}

func main() {
	var cfg config
	var addrs string
	flag.StringVar(&cfg.driver, "driver", "", "redlock, etcd or zookeeper")
	flag.StringVar(&addrs, "addrs", "", "comma-separated backend addresses")
	flag.StringVar(&cfg.url, "url", "", "backend URL (e.g. migrate+both://?old=...&new=...), instead of -driver and -addrs")
	flag.StringVar(&cfg.election, "election", "", "election name (partition mode: the group)")
	flag.StringVar(&cfg.proc, "proc", "", "process name, used as the identity")
	flag.StringVar(&cfg.fence, "fence", "", "base URL of the fencing store")
	flag.StringVar(&cfg.key, "key", "", "key of the election's events and fence resource (partition mode: p<N> per partition)")
	flag.DurationVar(&cfg.ttl, "ttl", time.Second, "lease TTL (ZooKeeper: session timeout)")
	flag.DurationVar(&cfg.writeEvery, "write-every", 20*time.Millisecond, "interval between fenced writes while leading")
	flag.DurationVar(&cfg.termMin, "term-min", 300*time.Millisecond, "shortest voluntary term")
	flag.DurationVar(&cfg.termMax, "term-max", 2*time.Second, "longest voluntary term")
	flag.DurationVar(&cfg.requestTimeout, "request-timeout", 0, "redlock: Options.RequestTimeout (0: the default)")
	flag.IntVar(&cfg.partitions, "partitions", 0, "partition mode: share this many partitions of group -election with the other candidates")
	flag.IntVar(&cfg.priority, "priority", 0, "campaign with this elector.Options.Priority (0: none), never resign, and leave after -member-min to -member-max")
	flag.DurationVar(&cfg.minTerm, "min-term", 0, "with -priority: elector.Options.MinTerm")
	flag.DurationVar(&cfg.memberMin, "member-min", 5*time.Second, "partition and priority mode: shortest membership before a graceful leave")
	flag.DurationVar(&cfg.memberMax, "member-max", 15*time.Second, "partition and priority mode: longest membership before a graceful leave")
	flag.BoolVar(&cfg.cleanup, "cleanup", false, "migrate mode: run the runbook's step 4 on -election through -url (a migrate+done URL), check that the old store has no holder left, and exit")
	flag.Parse()
	if addrs != "" {
		cfg.addrs = strings.Split(addrs, ",")
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "candidate:", err)
		os.Exit(1)
	}
}

func open(driver string, addrs []string, requestTimeout time.Duration) (backend.Backend, func(), error) {
	switch driver {
	case "redlock":
		var clients []redis.UniversalClient
		io := max(200*time.Millisecond, requestTimeout)
		for _, a := range addrs {
			clients = append(clients, redis.NewClient(&redis.Options{
				Addr: a, DialTimeout: 200 * time.Millisecond, ReadTimeout: io,
				WriteTimeout: io, MaxRetries: -1, ContextTimeoutEnabled: true,
			}))
		}
		b, err := redlock.New(clients, &redlock.Options{RequestTimeout: requestTimeout, Logger: logger()})
		closeAll := func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		return b, func() { _ = b.Close(); closeAll() }, nil
	case "etcd":
		cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		// A Prefix: the leases share one watch of their keys (the layout
		// a process holding many elections is advised to use).
		b, err := etcd.New(cli, &etcd.Options{Prefix: "/elector-chaos/"})
		if err != nil {
			_ = cli.Close()
			return nil, nil, err
		}
		return b, func() { _ = b.Close(); _ = cli.Close() }, nil
	case "zookeeper":
		b, err := zookeeper.New(addrs, &zookeeper.Options{Logger: logger()})
		if err != nil {
			return nil, nil, err
		}
		return b, func() { _ = b.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown -driver %q; want redlock, etcd or zookeeper", driver)
}

func run(cfg config) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var (
		b      backend.Backend
		closeB func()
		err    error
	)
	if cfg.url != "" {
		var c io.Closer
		b, c, err = backendurl.Open(ctx, cfg.url)
		closeB = func() { _ = c.Close() }
	} else {
		b, closeB, err = open(cfg.driver, cfg.addrs, cfg.requestTimeout)
	}
	if err != nil {
		return err
	}
	defer closeB()
	// Up to 64 idle connections: a partition member writes for every
	// partition it owns.
	hc := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	if cfg.cleanup {
		return cleanup(ctx, b, cfg)
	}
	start := mono()
	var note string
	if cfg.priority > 0 {
		note = fmt.Sprintf("priority %d", cfg.priority)
	}
	emit(event{Mono: start, Proc: cfg.proc, Kind: "start", Note: note})
	// Ties the log's wall-clock times to the history's monotonic ones.
	logger().Debug("started", "mono", start)
	if cfg.partitions > 0 {
		return runPartitions(ctx, b, hc, cfg)
	}
	term := cfg.termMin + rand.N(cfg.termMax-cfg.termMin+1)
	member := ctx
	if cfg.priority > 0 {
		// A preferred candidate leads until it yields or leaves.
		term = 0
		var cancel context.CancelFunc
		member, cancel = context.WithTimeout(ctx, cfg.memberMin+rand.N(cfg.memberMax-cfg.memberMin+1))
		defer cancel()
		context.AfterFunc(member, func() {
			if ctx.Err() == nil {
				emit(event{Mono: mono(), Proc: cfg.proc, Kind: "leave", Key: cfg.key})
			}
		})
	}
	var e *elector.Elector
	e, err = elector.New(b, cfg.election, &elector.Options{
		Identity: cfg.proc,
		TTL:      cfg.ttl,
		Logger:   logger(),
		Priority: cfg.priority,
		MinTerm:  cfg.minTerm,
		OnElected: func(ctx context.Context, t elector.Term) {
			emit(event{Mono: mono(), Proc: cfg.proc, Kind: "elected", Token: t.Token, Key: cfg.key})
			note := lead(ctx, e, hc, cfg, t.Token, term)
			emit(event{Mono: mono(), Proc: cfg.proc, Kind: "stepdown", Token: t.Token, Note: note, Key: cfg.key})
		},
		OnRevoked: func(t elector.Term, reason error) {
			emit(event{Mono: mono(), Proc: cfg.proc, Kind: "revoked", Token: t.Token, Note: reason.Error(), Key: cfg.key})
		},
	})
	if err != nil {
		return err
	}
	err = e.Run(member)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil
	case errors.Is(err, backend.ErrInvalid):
		// Refused for good, as a replica left on the old store after a
		// migration's marker must be.
		emit(event{Mono: mono(), Proc: cfg.proc, Kind: "refused", Note: err.Error(), Key: cfg.key})
		return nil
	}
	return err
}

// cleanup runs migrate's Cleanup (runbook step 4) for cfg.election
// through b, then reads the old store named in cfg.url: no holder may be
// left, neither the marker nor a replica's key.
func cleanup(ctx context.Context, b backend.Backend, cfg config) error {
	mb, ok := b.(*migrate.Backend)
	if !ok {
		return fmt.Errorf("-cleanup: -url %q is not a migrate URL", cfg.url)
	}
	if _, err := mb.Cleanup(ctx, cfg.election); err != nil {
		return err
	}
	u, err := url.Parse(cfg.url)
	if err != nil {
		return err
	}
	old, c, err := backendurl.Open(ctx, u.Query().Get("old"))
	if err != nil {
		return fmt.Errorf("open the old store: %w", err)
	}
	defer c.Close()
	h, err := old.Leader(ctx, cfg.election)
	switch {
	case errors.Is(err, backend.ErrNoLeader):
		return nil
	case err != nil:
		return fmt.Errorf("read the old store after cleanup: %w", err)
	}
	return fmt.Errorf("after cleanup the old store still names holder %q (token %d)", h.Identity, h.Token)
}

// logger logs to stderr (kept in the campaign's report directory) at the
// level ELECTOR_CHAOS_LOG names (debug, info, warn, error; warn when unset
// or unknown): debug follows every partition's campaign and hand-over.
func logger() *slog.Logger {
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(os.Getenv("ELECTOR_CHAOS_LOG")))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// lead writes every writeEvery until ctx ends or length has passed, then
// resigns (never, for a length of 0); it returns why the term ended.
func lead(ctx context.Context, e *elector.Elector, hc *http.Client, cfg config, token uint64, length time.Duration) string {
	prepare := cfg.writeEvery / 2
	var resign <-chan time.Time
	if length > 0 {
		resignAt := time.NewTimer(length)
		defer resignAt.Stop()
		resign = resignAt.C
	}
	tick := time.NewTicker(cfg.writeEvery)
	defer tick.Stop()
	for {
		// The write happens only if the term has not visibly ended: a
		// leader acts on its belief, which is what fencing must contain.
		if ctx.Err() != nil {
			return "ctx: " + context.Cause(ctx).Error()
		}
		// Between deciding to act and acting, a leader spends time (reading
		// state, computing); a SIGSTOP landing here is Kleppmann's pause,
		// and the write then goes out late, with the term's token.
		time.Sleep(prepare)
		write(hc, cfg.fence, cfg.proc, cfg.key, token)
		select {
		case <-ctx.Done():
			return "ctx: " + context.Cause(ctx).Error()
		case <-resign:
			if err := e.Resign(ctx); err != nil && ctx.Err() == nil {
				return "resign failed: " + err.Error()
			}
			return "resigned"
		case <-tick.C:
		}
	}
}

// write sends one fenced write. It deliberately ignores the term's ctx: a
// leader's write already under way is not recalled by its elector, which is
// why the resource must check the token.
func write(hc *http.Client, fence, proc, key string, token uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	q := url.Values{"proc": {proc}, "token": {strconv.FormatUint(token, 10)}, "key": {key}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fence+"/write?"+q.Encode(), nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}
