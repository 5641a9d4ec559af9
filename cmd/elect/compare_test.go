//go:build unix

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/internal/testenv"
)

// compareJSON is the part of elect compare --json the tests read.
type compareJSON struct {
	Prefix      string  `json:"prefix"`
	TTLMS       float64 `json:"ttl_ms"`
	Interrupted bool    `json:"interrupted"`
	Backends    []struct {
		Name       string  `json:"name"`
		TTLFloorMS float64 `json:"ttl_floor_ms"`
		Token      string  `json:"token_source"`
		Safety     string  `json:"safety"`
		Results    []struct {
			Workload string  `json:"workload"`
			Samples  int     `json:"samples"`
			Errors   int     `json:"errors"`
			First    string  `json:"first_error"`
			Skipped  string  `json:"skipped"`
			P50      float64 `json:"p50_ms"`
			P95      float64 `json:"p95_ms"`
			P99      float64 `json:"p99_ms"`
			Max      float64 `json:"max_ms"`
			PerSec   float64 `json:"per_second"`
			Requests *struct {
				Total   int64   `json:"total"`
				PerHeld float64 `json:"per_held_per_round"`
			} `json:"requests"`
			All []float64 `json:"samples_ms"`
		} `json:"results"`
		Leftover []string `json:"leftover"`
	} `json:"backends"`
}

// compareArgs returns the --backend flags of the three test backends.
// Redis gets a node timeout of 1s instead of 100ms: the test machine's
// load (with -race) would otherwise make the odd round miss its quorum.
func compareArgs(t *testing.T) []string {
	var args []string
	for _, name := range backends {
		u := backendURL(t, name, nil)
		if name == "redis" {
			u += "&request_timeout=1s"
		}
		args = append(args, "--backend="+u)
	}
	return args
}

var workloadNames = []string{"acquire+release", "throughput", "handover", "renew", "failover", "rebalance-join", "rebalance-leave"}

// TestCompareShort runs elect compare --short against the three test
// backends and checks the report's shape and sanity, then that nothing is
// left under its prefix.
func TestCompareShort(t *testing.T) {
	html := filepath.Join(t.TempDir(), "report.html")
	var stdout testenv.Buffer
	// One trial of the workloads whose every trial waits on the TTL.
	p := startElectOut(t, "compare", nil, &stdout, append([]string{"compare", "--short", "--failover-trials=1", "--rebalance-trials=1", "--json", "--html=" + html}, compareArgs(t)...)...)
	if code := p.wait(5 * time.Minute); code != 0 {
		t.Fatalf("elect compare: exit %d; want 0\n%s", code, p.out.String())
	}
	var rep compareJSON
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout.String())
	}
	if len(rep.Backends) != 3 || rep.Interrupted || rep.TTLMS != 2000 {
		t.Fatalf("report: %d backends, interrupted %v, TTL %vms; want 3, false, 2000", len(rep.Backends), rep.Interrupted, rep.TTLMS)
	}
	for i, b := range rep.Backends {
		if b.Name != backends[i] || b.Token == "" || b.Safety == "" || b.TTLFloorMS <= 0 || b.TTLFloorMS > rep.TTLMS {
			t.Errorf("backend %d: name %q, token %q, safety %q, TTL floor %vms; want %q, a token source, a safety line, a floor in (0, TTL]",
				i, b.Name, b.Token, b.Safety, b.TTLFloorMS, backends[i])
		}
		if len(b.Results) != len(workloadNames) || len(b.Leftover) != 0 {
			t.Errorf("%s: %d results, left behind %q; want %d, nothing", b.Name, len(b.Results), b.Leftover, len(workloadNames))
		}
		for j, r := range b.Results {
			if j < len(workloadNames) && r.Workload != workloadNames[j] {
				t.Errorf("%s: result %d is %q; want %q", b.Name, j, r.Workload, workloadNames[j])
			}
			if r.Samples == 0 || r.Errors != 0 || r.Skipped != "" || len(r.All) != r.Samples {
				t.Errorf("%s %s: %d samples, %d errors (%s), skipped %q; want samples, no error", b.Name, r.Workload, r.Samples, r.Errors, r.First, r.Skipped)
			}
			if !(0 <= r.P50 && r.P50 <= r.P95 && r.P95 <= r.P99 && r.P99 <= r.Max) {
				t.Errorf("%s %s: p50 %v p95 %v p99 %v max %v; want them in order", b.Name, r.Workload, r.P50, r.P95, r.P99, r.Max)
			}
			if r.Workload == "failover" && r.All[0] < rep.TTLMS {
				t.Errorf("%s failover: fastest %vms; want at least the TTL %vms (the holder's lease must lapse first)", b.Name, r.All[0], rep.TTLMS)
			}
			if (r.Workload == "throughput" || r.Workload == "renew") && r.PerSec <= 0 {
				t.Errorf("%s %s: %v per second; want a rate", b.Name, r.Workload, r.PerSec)
			}
			if r.Workload == "renew" {
				checkRenewCost(t, b.Name, r.Requests)
			}
		}
	}
	if !strings.Contains(p.out.String(), "about") || !strings.Contains(p.out.String(), "failover") {
		t.Errorf("stderr shows no progress (phase, trials, time left):\n%s", p.out.String())
	}
	page, err := os.ReadFile(html)
	if err != nil || strings.Count(string(page), `<svg class="cdf"`) != len(workloadNames) {
		t.Errorf("--html: %v; want a page with %d CDF plots", err, len(workloadNames))
	}
	assertNothingLeft(t, rep.Prefix)
}

// checkRenewCost checks the requests counted while renewing: a Renew costs
// Redlock at most one request per master (five), fewer when renewals
// coalesce into one batch per master (redlock's batched renewals), ZooKeeper one (an exists call on
// the session's connection, which sends no ping while busy), and etcd far
// less than one: every election shares one lease, whose keep-alive one
// renewal serves for the others.
func checkRenewCost(t *testing.T, name string, c *struct {
	Total   int64   `json:"total"`
	PerHeld float64 `json:"per_held_per_round"`
}) {
	t.Helper()
	if c == nil {
		t.Errorf("%s renew: no request count; want one (the client is proxied)", name)
		return
	}
	// Every driver shares renewals: etcd one keepalive per lease, Redis a
	// coalesced script per node, ZooKeeper one request of the session for
	// all its leases. At the 20 elections of a short run ZooKeeper's
	// session traffic (pings, and a shared read every RenewInterval/4: see
	// zookeeper/report.go) is near one request per election; TestScale in
	// integration_test checks that it does not grow with the elections.
	want := map[string][2]float64{"redis": {0.001, 6}, "zk": {0.001, 1.5}, "etcd": {0.001, 0.5}}[name]
	lo, hi := want[0], want[1]
	if c.Total <= 0 || c.PerHeld < lo || c.PerHeld > hi {
		t.Errorf("%s renew: %d requests, %v per held election per round; want within [%v, %v]", name, c.Total, c.PerHeld, lo, hi)
	}
}

// TestCompareInterrupted sends SIGINT to elect compare while it holds many
// elections (renew) and while a crashed holder's lease is lapsing
// (failover): it exits 130, and nothing is left under its prefix.
func TestCompareInterrupted(t *testing.T) {
	t.Parallel()
	for _, phase := range []string{"handover", "renew", "failover"} {
		t.Run(phase, func(t *testing.T) {
			t.Parallel() // each run has a prefix of its own and injects no fault
			args := append([]string{"compare", "--short", "--held=200", "--trials=3"}, compareArgs(t)...)
			var stdout testenv.Buffer
			p := startElectOut(t, "compare", nil, &stdout, args...)
			prefix := waitMatch(t, p, regexp.MustCompile(`elections under (\S+)`))
			waitMatch(t, p, regexp.MustCompile(`elect compare: `+phase+` 1/`))
			p.signal(syscall.SIGINT)
			if code := p.wait(time.Minute); code != exitInterrupted {
				t.Fatalf("exit %d after SIGINT; want %d\n%s", code, exitInterrupted, p.out.String())
			}
			if !strings.Contains(p.out.String(), "interrupted; removed what the run created under "+prefix) {
				t.Errorf("no word of the cleanup on stderr:\n%s", p.out.String())
			}
			// After the word that the trial stops, only the cleanup reports.
			_, after, _ := strings.Cut(p.out.String(), "stopping the trial under way")
			for l := range strings.Lines(after) {
				if strings.HasPrefix(l, "elect compare: ") && !strings.HasPrefix(l, "elect compare: cleanup: ") {
					t.Errorf("after SIGINT, a progress line other than the cleanup's: %q", l)
				}
			}
			assertNothingLeft(t, prefix)
		})
	}
}

// TestCompareInterruptedPrompt: SIGINT during failover at a TTL of 25s
// ends elect compare well within the TTL, saying what it does; it
// names the cut-off holders' elections it leaves (etcd and ZooKeeper,
// whose leases lapse on their own) and leaves nothing on Redis. A second
// SIGINT stops the cleanup at once and says what may remain.
func TestCompareInterruptedPrompt(t *testing.T) {
	t.Parallel()
	// The two runs, the package's longest (the workloads before failover
	// and one failover trial take about 35 s at this TTL), go at once on
	// this test's own slot: as parallel subtests they would wait for slots
	// behind every other test and end the package well after the rest.
	// Each run has a prefix of its own and injects no fault.
	var runs sync.WaitGroup
	defer runs.Wait()
	for _, twice := range []bool{false, true} {
		runs.Go(func() {
			t.Run(map[bool]string{false: "once", true: "twice"}[twice], func(t *testing.T) {
				args := append([]string{"compare", "--short", "--ttl=25s", "--held=20", "--trials=3", "--throughput-trials=1", "--renew-rounds=1"}, compareArgs(t)...)
				p := startElectOut(t, "compare", nil, io.Discard, args...)
				prefix := waitMatch(t, p, regexp.MustCompile(`elections under (\S+)`))
				waitMatch(t, p, regexp.MustCompile(`elect compare: failover 1/`))
				p.signal(syscall.SIGINT)
				start := time.Now()
				waitMatch(t, p, regexp.MustCompile(`stopping the trial under way, then removing what the run created`))
				if twice {
					waitMatch(t, p, regexp.MustCompile(`cleanup: `))
					p.signal(syscall.SIGINT)
				}
				// The cut-off holders' leases lapse 1.5 TTLs after the cut, past
				// compare's longest wait for them: it does not wait.
				bound := 15 * time.Second
				if code := p.wait(bound); code != exitInterrupted {
					t.Fatalf("exit %d after SIGINT; want %d\n%s", code, exitInterrupted, p.out.String())
				}
				t.Logf("exited %v after SIGINT", time.Since(start).Round(time.Millisecond))
				out := p.out.String()
				if twice {
					if !strings.Contains(out, "stopping the cleanup now") || !strings.Contains(out, "left behind under "+prefix) {
						t.Errorf("a second SIGINT: no word of the cleanup stopped and of what may remain:\n%s", out)
					}
					return
				}
				if strings.Contains(out, "removed what the run created") {
					if !strings.Contains(out, "left behind") {
						assertNothingLeft(t, prefix)
					}
				} else if !regexp.MustCompile(`left behind under ` + regexp.QuoteMeta(prefix) + `:\n(etcd|zk): elections still led .*failover/0`).MatchString(out) {
					t.Errorf("neither removed everything nor named the cut-off holders' elections left:\n%s", out)
				}
				keys, _ := redisKeysUnder(t, prefix)
				if len(keys) > 0 {
					t.Errorf("redis: keys %q left under %s", keys, prefix)
				}
			})
		})
	}
}

// TestCompareUnreachable: a backend that refuses connections, or accepts
// them and never answers, is reported within seconds, naming its real
// address and how long the first campaign tried, before any workload runs.
func TestCompareUnreachable(t *testing.T) {
	t.Parallel() // listeners of its own
	silent := testenv.SilentListener(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String() // closed: connections are refused
	ln.Close()
	for _, tc := range []struct{ name, url, addr string }{
		{"redis-refused", "redis://" + refused, refused},
		{"etcd-silent", "etcd://" + silent, silent},
		{"zk-refused", "zk://" + refused, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			began := time.Now()
			p := startElect(t, "compare", nil, "compare", "--short", "--backend="+tc.url)
			if code := p.wait(40 * time.Second); code != exitBackend {
				t.Fatalf("exit %d; want %d\n%s", code, exitBackend, p.out.String())
			}
			took := time.Since(began)
			out := p.out.String()
			if !strings.Contains(out, "does not answer") || !strings.Contains(out, tc.addr) || strings.Contains(out, "rebalance") {
				t.Errorf("want a report naming %s before any workload:\n%s", tc.addr, out)
			}
			// It says how long it tried: never "within 10s" before 10 s.
			if took < 10*time.Second && strings.Contains(out, "within 10s") {
				t.Errorf("reported %v after it started as not succeeding within 10s:\n%s", took.Round(time.Millisecond), out)
			}
		})
	}
}

// TestCompareHTMLUnwritable: an --html path that cannot be written is
// refused (exit 2) before the run starts.
func TestCompareHTMLUnwritable(t *testing.T) {
	code, out := runElect(t, nil, append([]string{"compare", "--short", "--html=" + filepath.Join(t.TempDir(), "no", "such", "dir", "r.html")}, compareArgs(t)...)...)
	if code != exitUsage || !strings.Contains(out, "--html") || strings.Contains(out, "elections under") {
		t.Errorf("exit %d; want %d, refused before the run:\n%s", code, exitUsage, out)
	}
}

// redisKeysUnder returns the keys of the test Redis nodes under prefix.
func redisKeysUnder(t *testing.T, prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	for _, addr := range testenv.RedisAddrs(t) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		keys, err := c.Keys(ctx, "elect-test:"+prefix+"*").Result()
		c.Close()
		if err != nil {
			return out, err
		}
		out = append(out, keys...)
	}
	return out, nil
}

// waitMatch waits for re to match elect's output and returns its first
// group (or the match).
func waitMatch(t *testing.T, p *proc, re *regexp.Regexp) string {
	t.Helper()
	out := p.awaitOutput(3*time.Minute, re.String(), re.MatchString)
	m := re.FindStringSubmatch(out)
	return m[len(m)-1]
}

// assertNothingLeft scans each test backend for anything under the
// election prefix: Redis keys (locks and fencing counters), etcd keys,
// ZooKeeper ephemeral znodes (the empty parents are containers, which the
// servers remove on their own).
func assertNothingLeft(t *testing.T, prefix string) {
	t.Helper()
	if !strings.HasPrefix(prefix, "elect-compare/") {
		t.Fatalf("prefix %q; want elect-compare/<random>", prefix)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range testenv.RedisAddrs(t) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		keys, err := c.Keys(ctx, "elect-test:"+prefix+"*").Result()
		c.Close()
		if err != nil || len(keys) != 0 {
			t.Errorf("redis %s: keys %q (%v); want none under %s", addr, keys, err, prefix)
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: testenv.EtcdEndpoints(t), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "/elect-test/"+prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("etcd: %v keys (%v); want none under %s", resp, err, prefix)
	}
	conn, _, err := zk.Connect(testenv.ZKServers(t), 5*time.Second, zk.WithLogger(testenv.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, path := range ephemerals(t, conn, "/elect-test/"+prefix) {
		t.Errorf("zookeeper: ephemeral znode %s left", path)
	}
}

// ephemerals returns the ephemeral znodes at or below path.
func ephemerals(t *testing.T, conn *zk.Conn, path string) []string {
	children, stat, err := conn.Children(path)
	if err == zk.ErrNoNode {
		return nil
	}
	if err != nil {
		t.Errorf("zookeeper: children of %s: %v", path, err)
		return nil
	}
	var out []string
	if stat.EphemeralOwner != 0 {
		out = append(out, path)
	}
	for _, c := range children {
		out = append(out, ephemerals(t, conn, path+"/"+c)...)
	}
	return out
}
