package integration_test

// Round trips per uncontended acquire+release, counted by the servers
// themselves (Redis INFO commandstats, etcd's gRPC metrics, ZooKeeper's
// mntr), for each driver and its peer on the same servers. Unlike latency,
// these counts do not move with machine load, so the test asserts the
// driver's and logs both sides:
//
//	eval "$(../scripts/servers.sh env)"
//	go test -run TestRoundTrips -v .

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/leaderkit/elector/internal/testenv"
)

// roundTripOps is how many acquire+release operations each side runs
// between two readings of the counters.
const roundTripOps = 40

// counts is a reading of a server counter per request kind, summed over a
// cluster's members.
type counts map[string]float64

// sub returns c - prev per op, keeping the kinds that moved.

// metricsClient reads etcd's /metrics without keeping connections open
// after the test (goleak would report their goroutines).
var metricsClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (c counts) sub(prev counts, ops int) counts {
	d := counts{}
	for k, v := range c {
		if n := (v - prev[k]) / float64(ops); n > 0.005 {
			d[k] = n
		}
	}
	return d
}

// total returns the sum over the kinds whose name does not end in "-usec".
func (c counts) total() float64 {
	var t float64
	for k, v := range c {
		if !strings.HasSuffix(k, "-usec") {
			t += v
		}
	}
	return t
}

func (c counts) String() string {
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&sb, " %s=%.2f", k, c[k])
	}
	return strings.TrimSpace(sb.String())
}

// measureRoundTrips runs op a few times to warm up, then roundTripOps
// times between two readings of read, and returns the requests per op.
func measureRoundTrips(t *testing.T, read func(t *testing.T) counts, op func(ctx context.Context) error) counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 3 {
		if err := op(ctx); err != nil {
			t.Fatal(err)
		}
	}
	before := read(t)
	for range roundTripOps {
		if err := op(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return read(t).sub(before, roundTripOps)
}

// redisCounts reads INFO commandstats of every address: calls per command,
// and the server's own time per command as "<cmd>-usec".
func redisCounts(t testing.TB, addrs []string) counts {
	t.Helper()
	c := counts{}
	for _, a := range addrs {
		cli := redis.NewClient(&redis.Options{Addr: a})
		info, err := cli.Info(context.Background(), "commandstats").Result()
		_ = cli.Close()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			cmd, isCmd := strings.CutPrefix(name, "cmdstat_")
			if !ok || !isCmd || cmd == "info" || cmd == "client|setinfo" || cmd == "hello" {
				continue
			}
			for kv := range strings.SplitSeq(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				n, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					c[cmd] += n
				case "usec":
					c[cmd+"-usec"] += n
				}
			}
		}
	}
	return c
}

// sentCounter counts the messages a gRPC client sends, per method (the
// last element of its name): a unary call is one, each message sent on a
// stream (a watch created, a keepalive) one more. The server counts the
// same in grpc_server_msg_received_total.
type sentCounter struct {
	mu sync.Mutex
	c  counts
}

func (sc *sentCounter) add(method string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.c[method[strings.LastIndexByte(method, '/')+1:]]++
}

// read returns a copy of the counts so far.
func (sc *sentCounter) read(*testing.T) counts {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return maps.Clone(sc.c)
}

// countedStream counts each message sent on a client stream.
type countedStream struct {
	grpc.ClientStream
	sc     *sentCounter
	method string
}

func (s countedStream) SendMsg(m any) error {
	s.sc.add(s.method)
	return s.ClientStream.SendMsg(m)
}

// countedEtcdClient returns a client on endpoints, closed at the end of t,
// and the counter of the messages it sends.
func countedEtcdClient(t *testing.T, endpoints []string) (*clientv3.Client, *sentCounter) {
	t.Helper()
	sc := &sentCounter{c: counts{}}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				sc.add(method)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return countedStream{cs, sc, method}, nil
			}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, sc
}

// etcdReceived sums grpc_server_msg_received_total per method over the
// /metrics of every member of endpoints.
func etcdReceived(endpoints []string) (counts, error) {
	c := counts{}
	for _, ep := range endpoints {
		resp, err := metricsClient.Get("http://" + ep + "/metrics")
		if err != nil {
			return nil, fmt.Errorf("etcd metrics: %w", err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "grpc_server_msg_received_total{") {
				continue
			}
			_, m, _ := strings.Cut(line, `grpc_method="`)
			method, _, _ := strings.Cut(m, `"`)
			n, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			c[method] += n
		}
		_ = resp.Body.Close()
	}
	return c, nil
}

// zkCounts reads zk_packets_received from every server's mntr: requests
// and pings alike.
func zkCounts(t *testing.T, servers []string) counts {
	t.Helper()
	c := counts{}
	for _, s := range servers {
		conn, err := net.DialTimeout("tcp", s, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(conn, "mntr")
		out, err := io.ReadAll(conn)
		_ = conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(out)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "zk_packets_received"); ok {
				n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				c["packets"] += n
			}
		}
	}
	return c
}

// logRoundTrips logs the counts of the driver and its peer, and fails if the
// driver makes more than max requests per acquire+release, as requests
// counts them.
func logRoundTrips(t *testing.T, mine, peer counts, peerName string, requests func(counts) float64, max float64) {
	t.Helper()
	t.Logf("elector: %.2f requests per acquire+release (%v)", requests(mine), mine)
	t.Logf("%s: %.2f requests per acquire+release (%v)", peerName, requests(peer), peer)
	if requests(mine) > max {
		t.Errorf("elector makes %.2f requests per uncontended acquire+release; want at most %.2f", requests(mine), max)
	}
}

// scriptCalls counts the requests of a Redis client that sends only
// scripts: Redis counts the commands a script runs in commandstats too.
func scriptCalls(c counts) float64 { return c["evalsha"] + c["eval"] }

// TestRoundTrips is not t.Parallel: Redis INFO and ZooKeeper mntr count
// every client's requests.
func TestRoundTrips(t *testing.T) {
	t.Run("redlock", func(t *testing.T) {
		addrs := testenv.RedisAddrs(t)
		read := func(t *testing.T) counts { return redisCounts(t, addrs) }
		rl := newRedlock(t)
		name := redlockName("rt")
		mine := measureRoundTrips(t, read, func(ctx context.Context) error {
			return backendOp(rl, redlockTTL)(ctx, name)
		})
		rs := newRedlockRedsync(t)
		peer := measureRoundTrips(t, read, func(ctx context.Context) error {
			// redsync bounds each attempt at expiry × its timeout factor,
			// 100 ms by default here, which a loaded machine's Redis exceeds;
			// the bound changes no count.
			m := rs.NewMutex(redlockName("rt"), redsync.WithExpiry(redlockTTL), redsync.WithTries(1), redsync.WithTimeoutFactor(0.5))
			if err := m.LockContext(ctx); err != nil {
				return err
			}
			_, err := m.UnlockContext(ctx)
			return err
		})
		// One script to acquire and one to release, on each of 5 nodes
		// (redsync's counts mix its SET NX with the commands its release
		// script runs; the "-usec" figures are the servers' own time).
		logRoundTrips(t, mine, peer, "redsync", scriptCalls, 2*float64(len(addrs)))
	})
	t.Run("etcd", func(t *testing.T) {
		// Counted at each side's own client: the cluster's metrics also
		// count the requests of every other test running meanwhile.
		eps := etcdEndpoints(t)
		mineCli, mineSent := countedEtcdClient(t, eps)
		eb := etcdBackend(t, mineCli)
		name := etcdName("rt")
		mine := measureRoundTrips(t, mineSent.read, func(ctx context.Context) error {
			return backendOp(eb, etcdTTL)(ctx, name)
		})
		peerCli, peerSent := countedEtcdClient(t, eps)
		s := etcdSession(t, peerCli)
		e := concurrency.NewElection(s, etcdName("rt"))
		peer := measureRoundTrips(t, peerSent.read, func(ctx context.Context) error {
			if err := e.Campaign(ctx, "bench"); err != nil {
				return err
			}
			return e.Resign(ctx)
		})
		// A Txn to campaign, a Txn to release, and the keepalive of the
		// shared lease (two requests every TTL/5), and the watch of its
		// own key each term, which reports a foreign delete at once.
		logRoundTrips(t, mine, peer, "concurrency", counts.total, 3.5)
	})
	t.Run("zookeeper", func(t *testing.T) {
		srv := zkBenchServer(t)
		read := func(t *testing.T) counts { return zkCounts(t, testenv.ZKServers(t)) }
		zb := zkBackend(t, srv, nil)
		name := zkName("rt")
		mine := measureRoundTrips(t, read, func(ctx context.Context) error {
			return backendOp(zb, zkTTL)(ctx, name)
		})
		lock := zk.NewLock(zkConn(t, srv, nil), zkPrefix+"-zklock/"+zkName("rt"), zk.WorldACL(zk.PermAll))
		peer := measureRoundTrips(t, read, func(context.Context) error {
			if err := lock.Lock(); err != nil {
				return err
			}
			return lock.Unlock()
		})
		// Create with the listing pipelined behind it (one round trip),
		// the own znode's watch armed in the background, and Delete;
		// pings of the session come on top.
		logRoundTrips(t, mine, peer, "zk.Lock", counts.total, 4.5)
	})
}
