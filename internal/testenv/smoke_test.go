package testenv_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/leaderkit/elector/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// key returns a key unique to this test run, so runs never see each other's
// data on the shared servers.
func key(t *testing.T) string {
	return fmt.Sprintf("/elector-smoke/%s/%d", t.Name(), time.Now().UnixNano())
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestRedisSmoke(t *testing.T) {
	ctx := ctxFor(t)
	addrs := testenv.RedisAddrs(t)
	if len(addrs) != 5 {
		t.Fatalf("got %d Redis addresses %v, want 5: Redlock tests need five masters", len(addrs), addrs)
	}
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		got, err := c.Ping(ctx).Result()
		c.Close()
		if err != nil || got != "PONG" {
			t.Errorf("PING %s: got %q, %v; want PONG", addr, got, err)
		}
	}
}

func TestRedisAuthSmoke(t *testing.T) {
	ctx := ctxFor(t)
	addr := testenv.RedisAuthAddr(t)
	k := key(t)

	anon := redis.NewClient(&redis.Options{Addr: addr})
	defer anon.Close()
	if err := anon.Set(ctx, k, "x", time.Minute).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("SET without credentials on %s: got %v, want a NOAUTH error: the node must require auth", addr, err)
	}

	for _, opts := range []*redis.Options{
		{Addr: addr, Password: testenv.RedisPassword},
		{Addr: addr, Username: testenv.RedisACLUser, Password: testenv.RedisACLPassword},
	} {
		c := redis.NewClient(opts)
		if err := c.Set(ctx, k, opts.Username, time.Minute).Err(); err != nil {
			t.Errorf("SET as user %q: %v", opts.Username, err)
		}
		if got, err := c.Get(ctx, k).Result(); err != nil || got != opts.Username {
			t.Errorf("GET as user %q: got %q, %v; want %q", opts.Username, got, err, opts.Username)
		}
		c.Close()
	}
}

// etcdPutGet writes a fresh key through c and reads it back.
func etcdPutGet(ctx context.Context, t *testing.T, c *clientv3.Client) {
	t.Helper()
	k := key(t)
	if _, err := c.Put(ctx, k, "v"); err != nil {
		t.Fatalf("put %s: %v", k, err)
	}
	resp, err := c.Get(ctx, k)
	if err != nil {
		t.Fatalf("get %s: %v", k, err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get %s: got %v, want one value \"v\"", k, resp.Kvs)
	}
	if _, err := c.Delete(ctx, k); err != nil {
		t.Fatalf("delete %s: %v", k, err)
	}
}

func TestEtcdSmoke(t *testing.T) {
	ctx := ctxFor(t)
	eps := testenv.EtcdEndpoints(t)
	if len(eps) != 3 {
		t.Fatalf("got %d etcd endpoints %v, want 3", len(eps), eps)
	}
	for _, ep := range eps {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatalf("etcd client for %s: %v", ep, err)
		}
		st, err := c.Status(ctx, ep)
		if err != nil {
			t.Errorf("status of %s: %v", ep, err)
		} else if st.Leader == 0 {
			t.Errorf("status of %s: got no leader, want one: the cluster must have a quorum", ep)
		}
		c.Close()
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	defer c.Close()
	etcdPutGet(ctx, t, c)
}

func TestEtcdTLSAuthSmoke(t *testing.T) {
	checkEtcdTLSAuth(t)
}

// checkEtcdTLSAuth proves the TLS member takes a client certificate, demands
// a password too, and serves Put and Get.
func checkEtcdTLSAuth(t *testing.T) {
	t.Helper()
	ctx := ctxFor(t)
	ep, caFile, certFile, keyFile := testenv.EtcdTLS(t)
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientv3.Config{
		Endpoints:   []string{ep},
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Logger:      zap.NewNop(),
	}

	// The client certificate alone names no etcd user: auth must be on.
	anon, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcd TLS client: %v", err)
	}
	_, err = anon.Put(ctx, key(t), "v")
	anon.Close()
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("put without a password: got %v, want permission denied: auth must be enabled", err)
	}

	cfg.Username, cfg.Password = testenv.EtcdUser, testenv.EtcdPassword
	c, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcd TLS client as %s: %v", cfg.Username, err)
	}
	defer c.Close()
	etcdPutGet(ctx, t, c)
}

func TestZKSmoke(t *testing.T) {
	servers := testenv.ZKServers(t)
	if len(servers) != 3 {
		t.Fatalf("got %d ZooKeeper servers %v, want 3", len(servers), servers)
	}
	for _, s := range servers {
		if mode := testenv.ZKMode(t, s); mode != "leader" && mode != "follower" {
			t.Errorf("srvr on %s: got mode %q, want leader or follower: the ensemble must have a quorum", s, mode)
		}
	}

	conn, events, err := zk.Connect(servers, 5*time.Second, zk.WithLogger(testenv.NewLogger(t)))
	if err != nil {
		t.Fatalf("zk connect: %v", err)
	}
	defer conn.Close()
	waitConnected(t, events)

	path := "/elector-smoke-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if _, err := conn.Create(path, []byte("v"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	got, stat, err := conn.Get(path)
	if err != nil || string(got) != "v" {
		t.Fatalf("get %s: got %q, %v; want \"v\"", path, got, err)
	}
	if stat.EphemeralOwner != conn.SessionID() {
		t.Errorf("get %s: got ephemeral owner %#x, want our session %#x", path, stat.EphemeralOwner, conn.SessionID())
	}
	if err := conn.Delete(path, stat.Version); err != nil {
		t.Fatalf("delete %s: %v", path, err)
	}
	if _, _, err := conn.Get(path); !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("get %s after delete: got %v, want zk.ErrNoNode", path, err)
	}
}

// waitConnected waits for the session to be established.
func waitConnected(t *testing.T, events <-chan zk.Event) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return
			}
		case <-timeout:
			t.Fatal("zk: no session within 15s")
		}
	}
}

func TestFaultPID(t *testing.T) {
	for _, node := range []struct{ kind, n string }{{"redis", "1"}, {"etcd", "1"}, {"zk", "1"}} {
		out := testenv.Fault(t, "pid", node.kind, node.n)
		pid, err := strconv.Atoi(out)
		if err != nil || pid <= 1 {
			t.Errorf("servers.sh pid %s %s: got %q, want a process ID", node.kind, node.n, out)
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			t.Errorf("servers.sh pid %s %s: got %d, but no such process: %v", node.kind, node.n, pid, err)
		}
	}
}
