package compare

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/internal/testenv"
)

// feedSplit feeds stream to a new parser in chunks of size and returns the
// requests counted.
func feedSplit(newParser func() requestParser, stream []byte, size int) int {
	p, n := newParser(), 0
	for i := 0; i < len(stream); i += size {
		n += p.feed(stream[i:min(i+size, len(stream))])
	}
	return n
}

// h2Frame returns an HTTP/2 frame.
func h2Frame(typ, flags byte, stream uint32, payload []byte) []byte {
	f := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(f[5:], stream)
	return append(f, payload...)
}

// grpcMsg returns a gRPC length-prefixed message of n bytes.
func grpcMsg(n int) []byte {
	m := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(m[1:], uint32(n))
	return append(m, bytes.Repeat([]byte{'*'}, n)...)
}

// TestParsersSplit: each parser counts the same requests however the
// stream is cut into reads, byte by byte included, and is not fooled by
// payloads that look like framing.
func TestParsersSplit(t *testing.T) {
	// RESP: three commands, one with a value holding "*9\r\n" and CRLFs, one inline.
	resp := []byte("*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$12\r\n*9\r\n$3\r\nab\r\n\r\nPING\r\n")
	// gRPC over HTTP/2: the preface, SETTINGS, two streams; stream 1 sends
	// two messages, the second split over two DATA frames, the first
	// padded; stream 3 one message of 0 bytes; a PING frame between.
	two := append(grpcMsg(3), grpcMsg(40)...)
	padded := append([]byte{4}, two[:20]...)
	padded = append(padded, 0, 0, 0, 0)
	h2 := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	h2 = append(h2, h2Frame(0x4, 0, 0, make([]byte, 6))...)
	h2 = append(h2, h2Frame(0x1, 0x4, 1, []byte("headers"))...)
	h2 = append(h2, h2Frame(0x0, 0x8, 1, padded)...)
	h2 = append(h2, h2Frame(0x6, 0, 0, make([]byte, 8))...)
	h2 = append(h2, h2Frame(0x0, 0x1, 1, two[20:])...)
	h2 = append(h2, h2Frame(0x1, 0x4, 3, []byte("headers"))...)
	h2 = append(h2, h2Frame(0x0, 0x1, 3, grpcMsg(0))...)
	// ZooKeeper: three packets of 5, 0 and 300 bytes.
	var zkStream []byte
	for _, n := range []int{5, 0, 300} {
		zkStream = binary.BigEndian.AppendUint32(zkStream, uint32(n))
		zkStream = append(zkStream, bytes.Repeat([]byte{1}, n)...)
	}
	for _, tc := range []struct {
		scheme string
		stream []byte
		want   int
	}{{"redis", resp, 3}, {"etcd", h2, 3}, {"zk", zkStream, 3}} {
		for _, size := range []int{1, 2, 3, 7, 64, len(tc.stream)} {
			if got := feedSplit(parserFor(tc.scheme), tc.stream, size); got != tc.want {
				t.Errorf("%s, fed %d bytes at a time: %d requests; want %d", tc.scheme, size, got, tc.want)
			}
		}
	}
	for _, s := range []string{"rediss", "etcds", "zks", "memory"} {
		if parserFor(s) != nil {
			t.Errorf("parserFor(%q) is not nil; want nil (TLS or unknown)", s)
		}
	}
}

// counted starts a counting proxy per address and returns their addresses
// and a function summing their counts.
func counted(t *testing.T, scheme string, addrs []string) ([]string, func() int64) {
	var out []string
	var requests atomic.Int64
	for _, a := range addrs {
		p, err := startProxy(a, parserFor(scheme), &requests)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		out = append(out, p.Addr())
	}
	return out, requests.Load
}

// checkDelta runs op, which sends want requests, and checks the count.
func checkDelta(t *testing.T, name string, count func() int64, want int64, op func() error) {
	t.Helper()
	before := count()
	if err := op(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := count() - before; got != want {
		t.Errorf("%s: %d requests counted; want %d", name, got, want)
	}
}

// TestProxyCountsRedis: the proxy counts pipelined commands, one with a
// value that looks like commands, sent to a real server.
func TestProxyCountsRedis(t *testing.T) {
	addrs, count := counted(t, "redis", testenv.RedisAddrs(t)[:1])
	conn, err := net.DialTimeout("tcp", addrs[0], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	key := "elect-test:" + PrefixRoot + "/count-test"
	big := strings.Repeat("*1\r\n$4\r\nPING\r\n", 40_000) // 560 KB that look like commands
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	req := strings.Repeat("*1\r\n$4\r\nPING\r\n", 10) +
		"*3\r\n" + bulk("SET") + bulk(key) + bulk(big) + "*2\r\n" + bulk("GET") + bulk(key) + "*2\r\n" + bulk("DEL") + bulk(key)
	// The replies: 10 PONGs, OK, the value, 1 key deleted.
	reply := strings.Repeat("+PONG\r\n", 10) + "+OK\r\n" + bulk(big) + ":1\r\n"
	checkDelta(t, "10 PINGs, SET of a large value, GET, DEL, pipelined", count, 13, func() error {
		if _, err := io.WriteString(conn, req); err != nil {
			return err
		}
		got := make([]byte, len(reply))
		if _, err := io.ReadFull(conn, got); err != nil {
			return err
		}
		if string(got) != reply {
			return fmt.Errorf("unexpected replies %.100q", got)
		}
		return nil
	})
}

// TestProxyCountsEtcd: the proxy counts the unary calls of a real etcd
// client, one of them larger than an HTTP/2 frame, and the requests of a
// lease keep-alive stream.
func TestProxyCountsEtcd(t *testing.T) {
	addrs, count := counted(t, "etcd", testenv.EtcdEndpoints(t)[:1])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: addrs, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	key := "/elect-test/" + PrefixRoot + "/count-test"
	if _, err := cli.Get(ctx, key); err != nil { // connects first
		t.Fatal(err)
	}
	checkDelta(t, "10 Gets", count, 10, func() error {
		for range 10 {
			if _, err := cli.Get(ctx, key); err != nil {
				return err
			}
		}
		return nil
	})
	checkDelta(t, "a Put of 100 KB and a Delete", count, 2, func() error {
		if _, err := cli.Put(ctx, key, strings.Repeat("x", 100_000)); err != nil {
			return err
		}
		_, err := cli.Delete(ctx, key)
		return err
	})
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Revoke(context.Background(), lease.ID)
	checkDelta(t, "3 KeepAliveOnce", count, 3, func() error {
		for range 3 {
			if _, err := cli.KeepAliveOnce(ctx, lease.ID); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestProxyCountsZooKeeper: the proxy counts the requests of a real
// ZooKeeper session.
func TestProxyCountsZooKeeper(t *testing.T) {
	addrs, count := counted(t, "zk", testenv.ZKServers(t)[:1])
	conn, events, err := zk.Connect(addrs, 30*time.Second, zk.WithLogger(testenv.NewLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
	}
	checkDelta(t, "10 Exists", count, 10, func() error {
		for range 10 {
			if _, _, err := conn.Exists("/" + PrefixRoot + "-count-test"); err != nil {
				return err
			}
		}
		return nil
	})
}
