package integration_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leaderkit/elector/internal/testenv"
	"github.com/leaderkit/elector/zookeeper"
)

// zkTTL is the session timeout of every ZooKeeper client here: the 2 s TTL
// every side-by-side benchmark uses, for every system.
const zkTTL = 2 * time.Second

// zkStock runs the ZooKeeper benchmarks on the ensemble with ZooKeeper's
// stock timing (tickTime 2 s, syncLimit 5), every session zkStockTTL.
var zkStock = flag.Bool("zk.stock", false, "ZooKeeper benchmarks on the stock-timing ensemble (ELECTOR_ZK_STOCK_SERVERS), every session 32s")

// zkStockTTL is the session timeout on the stock-timing ensemble: at least
// the zookeeper driver's MinSafeTTL there (30.25 s), at most its
// maxSessionTimeout (40 s).
const zkStockTTL = 32 * time.Second

// zkSessionTTL is the session timeout of every ZooKeeper client here: zkTTL,
// or zkStockTTL with -zk.stock.
func zkSessionTTL() time.Duration {
	if *zkStock {
		return zkStockTTL
	}
	return zkTTL
}

// zkPrefix is the prefix znode of the integration elections.
const zkPrefix = "/elector-it"

// zkName returns an election name unique to this run.
func zkName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// zkBackend returns a Backend on servers closed when tb ends.
func zkBackend(tb testing.TB, servers []string, dial zk.Dialer) *zookeeper.Backend {
	tb.Helper()
	b, err := zookeeper.New(servers, &zookeeper.Options{Prefix: zkPrefix, Dialer: dial})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// zkConn returns a raw go-zookeeper connection closed when tb ends.
func zkConn(tb testing.TB, servers []string, dial zk.Dialer) *zk.Conn {
	tb.Helper()
	if dial == nil {
		dial = net.DialTimeout
	}
	var logger zk.Logger = testenv.NewLogger(tb)
	if _, ok := tb.(*testing.B); ok {
		logger = zkQuiet{} // keep benchmark output parseable
	}
	c, _, err := zk.Connect(servers, zkSessionTTL(), zk.WithLogger(logger), zk.WithLogInfo(false), zk.WithDialer(dial))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

// zkQuiet discards go-zookeeper's log messages.
type zkQuiet struct{}

func (zkQuiet) Printf(string, ...any) {}

// zkCtx returns a watchdog context for tb.
func zkCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// zkLeaderServer returns the 1-based number of the ensemble's leader.
func zkLeaderServer(t *testing.T, servers []string) int {
	t.Helper()
	for i, s := range servers {
		// The srvr four-letter word (go-zookeeper's FLWSrvr cannot parse
		// the 3.8 version line).
		c, err := net.DialTimeout("tcp", s, 5*time.Second)
		if err != nil {
			continue
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Write([]byte("srvr"))
		out, _ := io.ReadAll(c)
		c.Close()
		if strings.Contains(string(out), "Mode: leader") {
			return i + 1
		}
	}
	t.Fatal("no ZooKeeper server reports Mode: leader")
	return 0
}

// zkCount counts the candidate znodes among an election's children.
func zkCount(kids []string) int {
	n := 0
	for _, k := range kids {
		if strings.HasPrefix(k, "_c_") {
			n++
		}
	}
	return n
}

// waitZKCandidates waits until dir has n candidates, looking again at each
// change of its children (or of its existence).
func waitZKCandidates(tb testing.TB, conn *zk.Conn, dir string, n int) {
	tb.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		kids, _, changed, err := conn.ChildrenW(dir)
		if err == zk.ErrNoNode {
			var ok bool
			if ok, _, changed, err = conn.ExistsW(dir); err == nil && ok {
				continue // created meanwhile: watch its children
			}
		}
		if err != nil {
			tb.Fatal(err)
		}
		got := zkCount(kids)
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			tb.Fatalf("%s: %d candidates after 20s, want %d", dir, got, n)
		}
	}
}

// waitZKWatched polls server's watches by path (the wchp four-letter word)
// until the first candidate of dir, the holder's znode, is watched by n
// sessions: the waiter has set its watch on its predecessor, so that a
// hand-over timed from here measures the notification, not the rest of the
// waiter's set-up.
func waitZKWatched(tb testing.TB, server string, conn *zk.Conn, dir string, n int) {
	tb.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		first := zkFirstCandidate(tb, conn, dir)
		if first != "" && zkWatchers(tb, server, dir+"/"+first) >= n {
			return
		}
		if time.Now().After(end) {
			tb.Fatalf("%s: first candidate %q not watched by %d sessions after 5s", dir, first, n)
		}
	}
}

// zkFirstCandidate returns the name of dir's candidate with the lowest
// sequence number, or "" when there is none.
func zkFirstCandidate(tb testing.TB, conn *zk.Conn, dir string) string {
	kids, _, err := conn.Children(dir)
	if err != nil && err != zk.ErrNoNode {
		tb.Fatal(err)
	}
	first, low := "", ""
	for _, k := range kids {
		if seq := k[max(len(k)-10, 0):]; strings.HasPrefix(k, "_c_") && (first == "" || seq < low) {
			first, low = k, seq
		}
	}
	return first
}

// zkWatchers counts the sessions that server lists, in its wchp answer, as
// watching path.
func zkWatchers(tb testing.TB, server, path string) int {
	c, err := net.DialTimeout("tcp", server, 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("wchp")); err != nil {
		tb.Fatal(err)
	}
	sc := bufio.NewScanner(c)
	n, in := 0, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !strings.HasPrefix(line, "\t"):
			in = line == path
		case in:
			n++
		}
	}
	return n
}

// crashDialer dials ZooKeeper and can silence every connection it made, as
// the crash of the process would: writes are swallowed, reads dropped, no
// FIN or RST is sent, and new dials fail. It records when the last bytes
// arrived from the server before the crash: the holder's last heard-from
// instant.
type crashDialer struct {
	mu      sync.Mutex
	crashed bool
	conns   []*crashConn
	last    atomic.Int64 // unix nanos of the last read before the crash
}

type crashConn struct {
	net.Conn
	d       *crashDialer
	crashed atomic.Bool
}

func (c *crashConn) Write(p []byte) (int, error) {
	if c.crashed.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *crashConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if c.crashed.Load() {
			if err != nil {
				return 0, err
			}
			continue
		}
		if n > 0 {
			c.d.last.Store(time.Now().UnixNano())
		}
		return n, err
	}
}

func (d *crashDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.crashed {
		return nil, net.ErrClosed
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	cc := &crashConn{Conn: c, d: d}
	d.conns = append(d.conns, cc)
	return cc, nil
}

// crash silences the connections and returns the last heard-from instant.
func (d *crashDialer) crash() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.crashed = true
	for _, c := range d.conns {
		c.crashed.Store(true)
	}
	return time.Unix(0, d.last.Load())
}
