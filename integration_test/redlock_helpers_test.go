package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/redlock"
)

// redlockTTL is the lease TTL of the Redlock benchmarks: the 2 s every
// side-by-side benchmark uses, for every system, so the figures compare.
const redlockTTL = 2 * time.Second

// redlockClients returns one go-redis client per test Redis master, with
// ContextTimeoutEnabled as redlock.New requires, closed at the end of tb.
func redlockClients(tb testing.TB) []redis.UniversalClient {
	tb.Helper()
	return redlockClientsAt(tb, testenv.RedisAddrs(tb))
}

// redlockClientsAt returns one client per address, closed at the end of tb.
func redlockClientsAt(tb testing.TB, addrs []string) []redis.UniversalClient {
	var cs []redis.UniversalClient
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true, PoolSize: 32})
		cs = append(cs, c)
		tb.Cleanup(func() { _ = c.Close() })
	}
	return cs
}

// newRedlock returns a Backend on the test masters whose lock keys are the
// bare election names, as redsync's are, closed at the end of tb.
func newRedlock(tb testing.TB) *redlock.Backend {
	tb.Helper()
	b, err := redlock.New(redlockClients(tb), &redlock.Options{NoPrefix: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// newRedlockRedsync returns a redsync v4 instance on the same masters, through
// go-redis v9 clients of its own.
func newRedlockRedsync(tb testing.TB) *redsync.Redsync {
	tb.Helper()
	var pools []rsredis.Pool
	for _, c := range redlockClients(tb) {
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

// redlockName returns an election (lock) name unique to this run.
func redlockName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "redlock-it/" + prefix + "-" + hex.EncodeToString(b[:])
}

// redlockCtx returns a context bounded as a watchdog for tb.
func redlockCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}
