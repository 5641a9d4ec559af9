package integration_test

// Helpers of the scale benchmark (scale_bench_test.go): the servers' own
// request counters, the process's CPU and memory, and the safety ledger
// of many elections held at once.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector"
	"github.com/leaderkit/elector/internal/testenv"
)

// redisCommands returns, for each test Redis master, the number of
// requests it has executed (INFO commandstats), INFO itself excluded, by
// the rule of script: with script true, a script call (EVAL, EVALSHA,
// FCALL and their read-only forms) counts once and the commands it runs
// not at all; with script false, every command counts, a script's own
// commands included (Redis counts those in commandstats as well, so a
// batched renewal of 200 keys there shows as 401 commands). In steady
// state every renewal, the Elector's and redsync's alike, is a script
// call.
func redisCommands(tb testing.TB, script bool) func() float64 {
	var cs []*redis.Client
	for _, a := range testenv.RedisAddrs(tb) {
		c := redis.NewClient(&redis.Options{Addr: a})
		tb.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	return func() float64 {
		var total float64
		for _, c := range cs {
			info, err := c.Info(context.Background(), "commandstats").Result()
			if err != nil {
				tb.Errorf("INFO commandstats: %v", err)
				return 0
			}
			for line := range strings.Lines(info) {
				name, rest, ok := strings.Cut(line, ":calls=")
				if !ok || name == "cmdstat_info" || script && !isScriptCall(name) {
					continue
				}
				n, _, _ := strings.Cut(rest, ",")
				v, _ := strconv.ParseFloat(n, 64)
				total += v
			}
		}
		return total / float64(len(cs)) // per node
	}
}

// isScriptCall reports whether a commandstats entry counts script calls.
func isScriptCall(name string) bool {
	switch strings.TrimPrefix(name, "cmdstat_") {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// etcdMessages returns the gRPC messages the etcd members have received
// (grpc_server_msg_received_total from /metrics), summed over members, of
// the methods for which keep says true.
func etcdMessages(tb testing.TB, keep func(method string) bool) func() float64 {
	endpoints := testenv.EtcdEndpoints(tb)
	return func() float64 {
		c, err := etcdReceived(endpoints)
		if err != nil {
			tb.Error(err)
			return 0
		}
		var total float64
		for method, n := range c {
			if keep(method) {
				total += n
			}
		}
		return total
	}
}

// zkPackets returns the packets the ZooKeeper servers have received
// (zk_packets_received of the mntr four-letter word), summed over servers:
// requests and session pings alike.
func zkPackets(tb testing.TB) func() float64 {
	servers := testenv.ZKServers(tb)
	return func() float64 {
		var total float64
		for _, s := range servers {
			v, err := zkMntr(s, "zk_packets_received")
			if err != nil {
				tb.Errorf("mntr %s: %v", s, err)
				return 0
			}
			total += v
		}
		return total
	}
}

// zkMntr returns one value of a ZooKeeper server's mntr output.
func zkMntr(addr, key string) (float64, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("mntr")); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "\t"); ok && k == key {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s in mntr", key)
}

// usage is a snapshot of the process's CPU time and memory.
type usage struct {
	at   time.Time
	cpu  time.Duration // user + system
	heap uint64        // live heap and goroutine stacks after a GC
	rss  uint64
	// goroutines is the number of goroutines of the process.
	goroutines int
	stack      uint64 // goroutine stacks after a GC (part of heap)
}

// measure takes a usage snapshot; gc first collects garbage, so that heap
// counts what is live.
func measure(gc bool) usage {
	u := usage{at: time.Now(), goroutines: runtime.NumGoroutine()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if gc {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		u.heap = ms.HeapAlloc + ms.StackInuse
		u.stack = ms.StackInuse
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			u.rss = pages * uint64(os.Getpagesize())
		}
	}
	return u
}

// scaleLedger checks the terms of many elections held by one process: no
// two terms of an election overlap, tokens strictly increase, and no term
// ends before the benchmark stops its electors. It counts elections held
// and collects renew latencies.
type scaleLedger struct {
	tb       testing.TB
	n        int
	all      chan struct{} // closed once n elections are held at once
	mu       sync.Mutex
	held     map[string]uint64 // election → token of its current term
	last     map[string]uint64 // election → highest token seen
	stopping bool
	lost     int
	renews   []time.Duration
	failed   int // renew attempts that failed
	// campaignErrs counts the campaigns of a peer harness that failed and
	// were retried; firstErr is the first such error.
	campaignErrs int
	firstErr     error
}

func newScaleLedger(tb testing.TB, n int) *scaleLedger {
	return &scaleLedger{tb: tb, n: n, all: make(chan struct{}),
		held: make(map[string]uint64, n), last: make(map[string]uint64, n)}
}

// elected records a term that started.
func (g *scaleLedger) elected(election string, token uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.held[election]; ok {
		g.tb.Errorf("%s: term with token %d began while the one with token %d lasts: terms overlap", election, token, t)
	}
	if last, ok := g.last[election]; ok && token <= last {
		g.tb.Errorf("%s: token %d after %d: tokens must strictly increase", election, token, last)
	}
	g.held[election], g.last[election] = token, token
	if len(g.held) == g.n {
		select {
		case <-g.all:
		default:
			close(g.all)
		}
	}
}

// ended records a term that ended.
func (g *scaleLedger) ended(election string, reason error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, election)
	if !g.stopping {
		g.lost++
		if g.lost <= 3 {
			g.tb.Errorf("%s: term ended during the benchmark: %v", election, reason)
		}
	}
}

// renewed records a renewal attempt.
func (g *scaleLedger) renewed(took time.Duration, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.failed++
		return
	}
	g.renews = append(g.renews, took)
}

// campaignFailed records a peer's failed campaign, which the peer retries.
func (g *scaleLedger) campaignFailed(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.campaignErrs++
	if g.firstErr == nil {
		g.firstErr = err
	}
}

// campaignErrors returns the failed campaigns recorded and the first error.
func (g *scaleLedger) campaignErrors() (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.campaignErrs, g.firstErr
}

// observe is an elector.Options.Observer feeding the ledger.
func (g *scaleLedger) observe(ev elector.Event) {
	switch ev.Kind {
	case elector.EventElected:
		g.elected(ev.Election, ev.Term.Token)
	case elector.EventEnded:
		g.ended(ev.Election, ev.Err)
	case elector.EventRenew:
		g.renewed(ev.Took, ev.Err)
	}
}

// stop marks the end of the benchmark: terms may end from now on.
func (g *scaleLedger) stop() {
	g.mu.Lock()
	g.stopping = true
	g.mu.Unlock()
}

// resetRenews forgets the renewals recorded so far (those of the cold
// start) and returns nothing.
func (g *scaleLedger) resetRenews() {
	g.mu.Lock()
	g.renews, g.failed = g.renews[:0], 0
	g.mu.Unlock()
}

// renewP99 returns the 99th percentile of the recorded renew latencies, and
// how many there are.
func (g *scaleLedger) renewP99() (time.Duration, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return p99(g.renews), len(g.renews)
}

// p99 returns the 99th percentile of ds (0 for none); it sorts ds.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[(len(ds)*99)/100]
}

// count returns the elections held now.
func (g *scaleLedger) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

// lostCount returns the terms that ended before stop.
func (g *scaleLedger) lostCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lost
}

// startProfile starts a CPU profile of case name into -scale.profile, if
// set, and returns the function that stops it.
func startProfile(tb testing.TB, name string) (stop func()) {
	if *scaleProfile == "" {
		return func() {}
	}
	f, err := os.Create(profilePath(name, "cpu"))
	if err != nil {
		tb.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		tb.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// writeProfiles writes the heap (live objects after a GC) and goroutine
// profiles of case name into -scale.profile, if set.
func writeProfiles(tb testing.TB, name string) {
	if *scaleProfile == "" {
		return
	}
	for _, p := range []struct {
		kind  string
		debug int
	}{{"heap", 0}, {"goroutine", 1}} {
		f, err := os.Create(profilePath(name, p.kind))
		if err != nil {
			tb.Fatal(err)
		}
		if err := pprof.Lookup(p.kind).WriteTo(f, p.debug); err != nil {
			tb.Error(err)
		}
		_ = f.Close()
	}
}

// profilePath names a profile of a scale case in -scale.profile.
func profilePath(name, kind string) string {
	return filepath.Join(*scaleProfile, strings.ReplaceAll(name, "/", "-")+"."+kind+".pprof")
}
