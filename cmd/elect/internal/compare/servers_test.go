package compare_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/cmd/elect/internal/compare"
	_ "github.com/leaderkit/elector/etcd"
	"github.com/leaderkit/elector/internal/testenv"
	_ "github.com/leaderkit/elector/migrate"
	_ "github.com/leaderkit/elector/redlock"
)

// keyPrefix is the Redis key prefix of the runs of these tests: the keys a
// run leaves are counted under it.
const keyPrefix = "elect-cmptest:"

// quiet drops go-redis's own log lines (failed dials of cut-off clients).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// redisURL is the URL of the test's Redis masters, with the node timeout
// raised for a loaded test machine.
func redisURL(t *testing.T) string {
	return "redis://" + strings.Join(testenv.RedisAddrs(t), ",") + "?prefix=" + keyPrefix + "&request_timeout=1s"
}

func etcdURL(t *testing.T) string {
	return "etcd://" + strings.Join(testenv.EtcdEndpoints(t), ",") + "?prefix=/elect-cmptest/"
}

// migrateURL is a migrate+phase:// URL over old and new.
func migrateURL(phase, old, new string) string {
	return "migrate+" + phase + "://?" + url.Values{"old": {old}, "new": {new}}.Encode()
}

// redisKeys returns, on every Redis node, the keys under pattern and those
// of them without an expiry.
func redisKeys(t *testing.T, pattern string) (keys, persistent []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range testenv.RedisAddrs(t) {
		c := redis.NewClient(&redis.Options{Addr: addr})
		ks, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			c.Close()
			t.Fatalf("redis %s: KEYS: %v", addr, err)
		}
		for _, k := range ks {
			keys = append(keys, addr+" "+k)
			if ttl, err := c.PTTL(ctx, k).Result(); err == nil && ttl == -1 {
				persistent = append(persistent, addr+" "+k)
			}
		}
		c.Close()
	}
	return keys, persistent
}

// hooked wraps a Target so that hook sees the election of every Campaign,
// before it reaches the store.
func hooked(t compare.Target, hook func(election string)) compare.Target {
	wrap := func(open func(context.Context) (*compare.Client, error)) func(context.Context) (*compare.Client, error) {
		if open == nil {
			return nil
		}
		return func(ctx context.Context) (*compare.Client, error) {
			c, err := open(ctx)
			if err == nil {
				c.Backend = hookBackend{c.Backend, hook}
			}
			return c, err
		}
	}
	t.Open, t.OpenCrashable, t.OpenCounted = wrap(t.Open), wrap(t.OpenCrashable), wrap(t.OpenCounted)
	return t
}

type hookBackend struct {
	backend.Backend
	hook func(string)
}

func (h hookBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	h.hook(c.Election)
	return h.Backend.Campaign(ctx, c)
}

// smallRun returns the options of a run of a few seconds on real servers.
func smallRun(prefix string) *compare.Options {
	o := compare.Short()
	o.TTL = time.Second
	o.Trials, o.Held, o.FloorTTLs = 3, 20, []time.Duration{time.Second}
	o.FailoverTrials, o.ThroughputTrials, o.RenewRounds = 1, 1, 1
	o.Prefix = prefix
	return o
}

// TestRunLeavesNoRedisKeys: a run on Redis, directly or as the old or new
// store of a migrate URL, completed or interrupted in any workload, leaves
// no key of its elections on any Redis node (neither a fencing counter,
// which never expires, nor a migrated marker, nor a lease held past the
// run), and no more keys without expiry than before; or its report says
// what it left. It runs in parallel with TestCompareWithinRateLimit alone,
// which writes nothing to Redis; every other test of the package runs
// before them (main_test.go).
func TestRunLeavesNoRedisKeys(t *testing.T) {
	t.Parallel()
	rd, ed := redisURL(t), etcdURL(t)
	urls := map[string]string{
		"redis":              rd,
		"migrate-both":       migrateURL("both", rd, ed),
		"migrate-new":        migrateURL("new", rd, ed),
		"migrate-both-to-rd": migrateURL("both", ed, rd),
	}
	type cut struct {
		election string // the run's ctx ends at the n-th campaign for it
		n        int
	}
	cases := []struct {
		url string
		cut cut
	}{
		{"redis", cut{}}, {"migrate-both", cut{}}, {"migrate-new", cut{}}, {"migrate-both-to-rd", cut{}},
		{"redis", cut{"ttl-floor", 1}}, {"redis", cut{"acquire", 2}}, {"redis", cut{"throughput/1", 3}},
		{"redis", cut{"handover", 2}}, {"redis", cut{"renew/10", 1}}, {"redis", cut{"failover/0", 2}},
		{"redis", cut{"rebalance/m/", 3}}, {"redis", cut{"rebalance/p/", 6}},
		{"migrate-both", cut{"handover", 2}}, {"migrate-new", cut{"renew/10", 1}},
	}
	for _, tc := range cases {
		name := tc.url
		if tc.cut.election != "" {
			name += "/cut-at-" + strings.TrimSuffix(tc.cut.election, "/")
		}
		t.Run(name, func(t *testing.T) {
			_, before := redisKeys(t, keyPrefix+"*")
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			o := smallRun(compare.NewPrefix())
			if strings.HasPrefix(tc.url, "migrate") {
				// A migrating lease is held on two stores, and a term ends
				// when either renewal fails: at a TTL of 1 s on a loaded
				// machine its partition group may not settle within the
				// rebalance bound, which this test, about keys, does not
				// measure (1 run of 4 at load 11; Redis alone 0 of 4).
				o.TTL = 2 * time.Second
			}
			target, err := compare.URLTarget(urls[tc.url], nil)
			if err != nil {
				t.Fatal(err)
			}
			var seen atomic.Int64
			target = hooked(target, func(election string) {
				rest, ok := strings.CutPrefix(election, o.Prefix+"/"+tc.cut.election)
				if tc.cut.election != "" && ok && (rest == "" || strings.HasSuffix(tc.cut.election, "/")) && seen.Add(1) == int64(tc.cut.n) {
					cancel()
				}
			})
			rep, err := compare.Run(ctx, []compare.Target{target}, o)
			switch {
			case tc.cut.election == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.cut.election != "" && (!errors.Is(err, context.Canceled) || rep == nil || !rep.Interrupted):
				t.Fatalf("Run: %v; want context.Canceled and an interrupted report (%d campaigns for %s)", err, seen.Load(), tc.cut.election)
			}
			if tc.cut.election == "" {
				if err := rep.Failed(); err != nil {
					t.Errorf("the run failed: %v", err)
				}
			}
			keys, after := redisKeys(t, keyPrefix+o.Prefix+"/*")
			b := rep.Backends[0]
			if len(keys) > 0 {
				t.Errorf("%d keys left under %s on the Redis nodes (%d without expiry), first %q; report: left %q, cleanup error %q",
					len(keys), o.Prefix, len(after), keys[0], b.Leftover, b.CleanupError)
			}
			if _, now := redisKeys(t, keyPrefix+"*"); len(now) > len(before) {
				t.Errorf("%d keys without expiry under %s before the run, %d after", len(before), keyPrefix, len(now))
			}
			if len(b.Leftover) > 0 || b.CleanupError != "" {
				t.Errorf("report: left %q, cleanup error %q; want nothing left", b.Leftover, b.CleanupError)
			}
		})
	}
}

// TestProxiedErrorsNameServers: the errors of a client opened through the
// local proxies (failover, renew) name the servers' addresses, not the
// proxies' ports: after Crash, a Renew fails naming a real node.
func TestProxiedErrorsNameServers(t *testing.T) {
	target, err := compare.URLTarget(redisURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := target.OpenCrashable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	election := compare.NewPrefix() + "/proxied"
	defer func() {
		c.Closer.Close()
		if err := target.Cleanup(context.Background(), []string{election}); err != nil {
			t.Errorf("Cleanup: %v", err)
		}
	}()
	l, err := c.Backend.Campaign(t.Context(), backend.Candidate{Election: election, Identity: "x", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.Crash()
	err = l.Renew(t.Context())
	if err == nil || !strings.Contains(err.Error(), testenv.RedisAddrs(t)[0]) {
		t.Fatalf("Renew after Crash: %v; want an error naming %s", err, testenv.RedisAddrs(t)[0])
	}
	for _, a := range testenv.RedisAddrs(t) {
		err = errors.New(strings.ReplaceAll(err.Error(), a, ""))
	}
	if strings.Contains(err.Error(), "127.0.0.1:") {
		t.Errorf("Renew after Crash names an address that is no server's: %v", err)
	}
}
