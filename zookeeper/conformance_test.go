package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/backendtest"
	"github.com/leaderkit/elector/internal/testenv"
)

// testPrefix is the prefix znode of every election the tests make.
const testPrefix = "/elector-test"

// testTTL is the TTL tests campaign with (the ensemble of scripts/servers.sh
// has tickTime 500ms and accepts session timeouts from 1s to 30s, so it is
// granted as asked).
const testTTL = 2 * time.Second

// faultDialer dials ZooKeeper for one Backend and can cut it off without
// closing anything: a cut connection swallows writes and drops what it
// reads, as a dead process or a silent network would, so the session lives
// on at the servers until its timeout.
type faultDialer struct {
	mu         sync.Mutex
	cut        bool
	conns      []*faultConn
	dropCreate atomic.Bool
	exists     atomic.Int64 // exists requests written
	ops        opCounts     // requests written, by opcode
}

// opCounts counts the requests a Backend wrote, by opcode (pings
// included, as opPing).
type opCounts [32]atomic.Int64

// snapshot returns the counts of every opcode that has one.
func (o *opCounts) snapshot() map[int]int64 {
	m := make(map[int]int64)
	for i := range o {
		if n := o[i].Load(); n > 0 {
			m[i] = n
		}
	}
	return m
}

type faultConn struct {
	net.Conn
	cut        atomic.Bool
	dropCreate *atomic.Bool // when set, the next create's reply breaks the connection
	dropReply  atomic.Bool  // the next reply breaks the connection
	exists     *atomic.Int64
	ops        *opCounts
}

// opCreate and opExists are opcodes of requests (after length and xid).
const (
	opCreate       = 1
	opDelete       = 2
	opExists       = 3
	opPing         = 11
	opGetChildren2 = 12
)

func (c *faultConn) Write(p []byte) (int, error) {
	if c.cut.Load() {
		return len(p), nil
	}
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opCreate && c.dropCreate.CompareAndSwap(true, false) {
		c.dropReply.Store(true)
	}
	if len(p) >= 12 && binary.BigEndian.Uint32(p[8:12]) == opExists {
		c.exists.Add(1)
	}
	if len(p) >= 12 {
		if op := binary.BigEndian.Uint32(p[8:12]); op < uint32(len(c.ops)) {
			c.ops[op].Add(1)
		}
	}
	return c.Conn.Write(p)
}

func (c *faultConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if n > 0 && c.dropReply.CompareAndSwap(true, false) {
			// The server took the create; the client never learns it.
			c.Conn.Close()
			return 0, errors.New("test: connection broken before the reply")
		}
		if !c.cut.Load() || err != nil {
			return n, err
		}
	}
}

func (d *faultDialer) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("test: dialer cut off")
	}
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	fc := &faultConn{Conn: c, dropCreate: &d.dropCreate, exists: &d.exists, ops: &d.ops}
	d.conns = append(d.conns, fc)
	return fc, nil
}

// setCut cuts every connection and refuses new ones, or (cut false) lets new
// connections through again.
func (d *faultDialer) setCut(cut bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = cut
	if cut {
		for _, c := range d.conns {
			c.cut.Store(true)
		}
	}
}

// drop closes every connection, as a server restart or a reset would; the
// client reconnects at once and keeps its session.
func (d *faultDialer) drop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Conn.Close()
	}
	d.conns = nil
}

// harness implements backendtest.Harness with Crasher, Expirer and Isolator.
type harness struct {
	t       testing.TB
	servers []string
	admin   *zk.Conn

	mu      sync.Mutex
	dialers map[backend.Backend]*faultDialer
}

var (
	_ backendtest.Crasher  = (*harness)(nil)
	_ backendtest.Expirer  = (*harness)(nil)
	_ backendtest.Isolator = (*harness)(nil)
)

func newHarness(t testing.TB) *harness {
	servers := testenv.ZKServers(t)
	admin, _, err := zk.Connect(servers, testTTL, zk.WithLogger(testenv.NewLogger(t)), zk.WithLogInfo(false))
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	return &harness{t: t, servers: servers, admin: admin, dialers: make(map[backend.Backend]*faultDialer)}
}

// newBackend makes a Backend with a fault dialer and the test options.
func (h *harness) newBackend(opts *Options) (*Backend, *faultDialer, error) {
	d := &faultDialer{}
	o := Options{Prefix: testPrefix}
	if opts != nil {
		o = *opts
	}
	o.Dialer = d.dial
	b, err := New(h.servers, &o)
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	h.dialers[b] = d
	h.mu.Unlock()
	return b, d, nil
}

func (h *harness) MakeBackend(ctx context.Context) (backend.Backend, error) {
	b, _, err := h.newBackend(nil)
	return b, err
}

func (h *harness) TTL() time.Duration { return testTTL }

func (h *harness) Close() { h.admin.Close() }

func (h *harness) dialer(b backend.Backend) *faultDialer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dialers[b]
}

// Crash cuts b off for good: no keepalive, no release reaches the servers.
func (h *harness) Crash(b backend.Backend) { h.dialer(b).setCut(true) }

// Isolate cuts b off until Heal.
func (h *harness) Isolate(b backend.Backend) { h.dialer(b).setCut(true) }

// Heal lets b connect again.
func (h *harness) Heal(b backend.Backend) { h.dialer(b).setCut(false) }

// Expire deletes the lease's candidate znode through another session, as an
// operator (or a session expiry) would.
func (h *harness) Expire(l backend.Lease) {
	if err := h.admin.Delete(l.(*lease).path, -1); err != nil {
		h.t.Errorf("Expire: deleting %s: %v", l.(*lease).path, err)
	}
}

// TestConformance is not t.Parallel: backendtest.Run already runs its rules
// at once (one per CPU), and their hand-over (TTL/2, 1 s) and prompt-return
// (0.7 s) bounds leave no room for other tests' load on top.
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(ctx context.Context, t *testing.T) (backendtest.Harness, error) {
		return newHarness(t), nil
	})
}
