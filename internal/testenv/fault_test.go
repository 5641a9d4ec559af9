package testenv_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leaderkit/elector/internal/testenv"
)

// These tests break and mend the shared servers through [testenv.Fault], so
// that CI proves the fault commands work on a fresh machine. They touch only
// the extra nodes (Redis 6, etcd 4) and one ZooKeeper follower, restore every
// node before they end, and rely on `make test` running one package at a time.

// authClient returns a client for the Redis auth node that never retries:
// a refused connection fails at once. Its timeouts leave a node just
// restarted on a loaded machine seconds to answer; a test that wants a
// request to time out gives it a context of its own.
func authClient(t *testing.T) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  testenv.RedisAuthAddr(t),
		Password:              testenv.RedisPassword,
		DialTimeout:           5 * time.Second,
		ReadTimeout:           5 * time.Second,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFaultRedisKillRestart(t *testing.T) {
	ctx := ctxFor(t)
	c := authClient(t)
	t.Cleanup(func() {
		if t.Failed() {
			testenv.Fault(t, "restart", "redis", "6")
		}
	})

	testenv.Fault(t, "kill", "redis", "6")
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING after kill: got nil error, want a refused connection")
	}
	testenv.Fault(t, "restart", "redis", "6")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}

	// With --aof (fsync always) a key and its TTL survive SIGKILL.
	testenv.Fault(t, "restart", "redis", "6", "--aof")
	k := key(t)
	if err := c.Set(ctx, k, "v", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	testenv.Fault(t, "kill", "redis", "6")
	testenv.Fault(t, "restart", "redis", "6", "--aof")
	if ttl, err := c.PTTL(ctx, k).Result(); err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL after kill and AOF restart: got %v, %v; want a TTL in (0, 1m]: AOF keeps keys", ttl, err)
	}
	// A plain restart comes back empty, whatever an AOF run left.
	testenv.Fault(t, "restart", "redis", "6")
	if err := c.Get(ctx, k).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after plain restart: got %v, want redis.Nil: a plain node starts empty", err)
	}
}

func TestFaultRedisPauseResume(t *testing.T) {
	ctx := ctxFor(t)
	c := authClient(t)
	t.Cleanup(func() { testenv.Fault(t, "resume", "redis", "6") })

	testenv.Fault(t, "pause", "redis", "6")
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := c.Ping(pctx).Err()
	cancel()
	if err == nil {
		t.Fatal("PING while paused: got nil error, want a timeout: a paused node must not answer")
	}
	testenv.Fault(t, "resume", "redis", "6")
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}
}

func TestFaultEtcdRestart(t *testing.T) {
	before := testenv.Fault(t, "pid", "etcd", "4")
	testenv.Fault(t, "restart", "etcd", "4")
	after := testenv.Fault(t, "pid", "etcd", "4")
	if before == after {
		t.Fatalf("etcd 4 pid after restart: got %s, the same as before; want a new process", after)
	}
	// The member keeps its data, auth included.
	checkEtcdTLSAuth(t)
}

func TestFaultZKKillRestart(t *testing.T) {
	servers := testenv.ZKServers(t)
	// Break a follower, so the ensemble keeps its leader throughout.
	n := testenv.ZKFollower(t, servers)
	node := strconv.Itoa(n + 1)
	t.Cleanup(func() {
		if t.Failed() {
			testenv.Fault(t, "restart", "zk", node)
		}
	})

	testenv.Fault(t, "kill", "zk", node)
	if conn, err := net.DialTimeout("tcp", servers[n], time.Second); err == nil {
		conn.Close()
		t.Fatalf("dial %s after kill: got a connection, want refused", servers[n])
	}
	testenv.Fault(t, "restart", "zk", node) // waits for it to rejoin
	if mode := testenv.ZKMode(t, servers[n]); mode != "leader" && mode != "follower" {
		t.Fatalf("zk %s after restart: got mode %q, want leader or follower", node, mode)
	}
}
