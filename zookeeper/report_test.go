package zookeeper

import (
	"encoding/binary"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/internal/testenv"
)

// TestReportsConfirmAnswersLater checks the Deadline's basis rule: an answer
// counts once a request sent reportLag (timeout/4) after it arrived has been
// answered too, a handshake counts at once, and merged answers never move
// the basis past what either would.
func TestReportsConfirmAnswersLater(t *testing.T) {
	t.Parallel()
	const timeout = 4 * time.Second // reportLag 1s
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var r reports
	r.linked(at(0))
	if !r.basis.Equal(at(0)) {
		t.Fatalf("after the handshake: basis %v, want the handshake's send time", r.basis.Sub(t0))
	}
	r.answered(at(1300), at(1302), timeout/reportLagDivisor) // a ping
	if !r.basis.Equal(at(0)) {
		t.Fatalf("after one answer: basis %v, want 0s: the answer may not have reached the leader", r.basis.Sub(t0))
	}
	r.answered(at(2000), at(2001), timeout/reportLagDivisor) // 698ms after the last arrival: too soon
	if !r.basis.Equal(at(0)) {
		t.Fatalf("after an answer 698ms later: basis %v, want 0s", r.basis.Sub(t0))
	}
	r.answered(at(2302), at(2303), timeout/reportLagDivisor) // exactly reportLag after the first arrival
	if !r.basis.Equal(at(1300)) {
		t.Fatalf("after an answer sent reportLag after the first arrived: basis %v, want 1.3s", r.basis.Sub(t0))
	}
	r.answered(at(3100), at(3101), timeout/reportLagDivisor)
	if !r.basis.Equal(at(2000)) {
		t.Fatalf("basis %v, want 2s", r.basis.Sub(t0))
	}
	// Requests sent close together merge: the older send time waits for
	// the newer arrival.
	r.answered(at(3110), at(3160), timeout/reportLagDivisor)
	if len(r.pending) != 2 || !r.pending[1].sent.Equal(at(3100)) || !r.pending[1].at.Equal(at(3160)) {
		t.Fatalf("pending %v, want the 2.302s answer and the merge (sent 3.1s, arrived 3.16s)", r.pending)
	}
	r.answered(at(4150), at(4151), timeout/reportLagDivisor) // confirms 2.302 and not yet the merge
	if !r.basis.Equal(at(2302)) {
		t.Fatalf("basis %v, want 2.302s", r.basis.Sub(t0))
	}
	r.answered(at(4160), at(4161), timeout/reportLagDivisor)
	if !r.basis.Equal(at(3100)) {
		t.Fatalf("basis %v, want 3.1s, the merged answer's older send time", r.basis.Sub(t0))
	}
	// A reconnection drops what the old connection answered.
	r.linked(at(5000))
	if len(r.pending) != 0 || !r.basis.Equal(at(5000)) {
		t.Fatalf("after a reconnection: basis %v, pending %v; want 5s and none", r.basis.Sub(t0), r.pending)
	}
	// A flood of answers keeps a bounded queue.
	for i := range 10000 {
		r.answered(at(5001+i), at(5002+i), timeout/reportLagDivisor)
	}
	if len(r.pending) > 2*reportSlots {
		t.Fatalf("%d pending answers, want at most %d", len(r.pending), 2*reportSlots)
	}
	// The last was sent at 15s: the newest request confirmed was sent at
	// most reportLag, a round trip and two merge spans (its own, and the
	// one its confirmer's arrival waited for) before.
	if want := at(15000 - 1000 - 1 - 2*63); r.basis.Before(want) {
		t.Fatalf("after a flood: basis %v, want at least %v", r.basis.Sub(t0), want.Sub(t0))
	}
}

// TestDeadlineSurvivesUnreportedAnswer is the ZooKeeper overlap of a
// follower paused right after it answered a request: the follower reports
// the sessions it heard from only when the leader next pings it, so the
// leader never counts that request, and expires the session a timeout after
// the follower's previous report. The lease's Deadline must not be later
// than that expiry. The lease's session talks to a follower only; its last
// ping is answered, and a read sent just before the next one; the follower
// is stopped as soon as the read returns, and another session watches the
// lease's znode go.
//
// Before the Deadline waited for confirmation (report.go) it was about 1s
// after the znode went; this test then failed unless the leader pinged the
// follower within the few microseconds between the read's answer and the
// SIGSTOP.
//
// Not t.Parallel: it stops a server the other tests use.
func TestDeadlineSurvivesUnreportedAnswer(t *testing.T) {
	const ttl = 6 * time.Second // go-zookeeper pings every 2s
	servers := testenv.ZKServers(t)
	follower := testenv.ZKFollower(t, servers)
	pid, err := strconv.Atoi(testenv.Fault(t, "pid", "zk", strconv.Itoa(follower+1)))
	if err != nil {
		t.Fatalf("pid of zk %d: %v", follower+1, err)
	}
	var others []string
	for i, s := range servers {
		if i != follower {
			others = append(others, s)
		}
	}
	admin, _, err := zk.Connect(others, ttl, zk.WithLogger(testenv.NewLogger(t)), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	pings := make(chan time.Time, 16)
	b, err := New(servers[follower:follower+1], &Options{Prefix: testPrefix,
		Dialer: func(network, addr string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout(network, addr, timeout)
			if err != nil {
				return nil, err
			}
			return &pingConn{Conn: c, pings: pings}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := newFixture(t).ctx
	bl, err := b.Campaign(ctx, backend.Candidate{Election: "unreported-" + randomSuffix(), Identity: "old", TTL: ttl})
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	l := bl.(*lease)
	if _, err := admin.Sync(l.path); err != nil { // catch up with the create
		t.Fatal(err)
	}
	ok, _, gone, err := admin.ExistsW(l.path)
	if err != nil || !ok {
		t.Fatalf("ExistsW(%s): %v, %v", l.path, ok, err)
	}

	drain(pings)
	var ping time.Time
	select {
	case ping = <-pings:
	case <-ctx.Done():
		t.Fatal("no ping answered")
	}
	// The next ping goes out about 2s after this one: read just before.
	timer := time.NewTimer(time.Until(ping.Add(ttl/3 - 250*time.Millisecond)))
	<-timer.C
	if _, _, err := l.s.conn.Exists(l.path); err != nil {
		t.Fatalf("Exists: %v", err)
	}
	t.Cleanup(func() { resumeZK(t, follower+1, servers[follower]) })
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP zk %d: %v", follower+1, err)
	}
	stopped := time.Now()
	deadline := l.Deadline()

	select {
	case ev := <-gone:
		deleted := time.Now()
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("watch event %v, want the znode deleted", ev.Type)
		}
		if d := l.Deadline(); d.After(deadline) {
			deadline = d
		}
		t.Logf("follower stopped at t; Deadline t%+v, znode gone at t%+v", deadline.Sub(stopped), deleted.Sub(stopped))
		if deadline.After(deleted) {
			t.Fatalf("Deadline %v after the znode went: the session expired before the lease's Deadline", deadline.Sub(deleted))
		}
	case <-ctx.Done():
		t.Fatal("the znode outlived the session's timeout by far")
	}
}

// drain empties ch.
func drain(ch <-chan time.Time) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// pingConn reports when a ping's reply is read (go-zookeeper reads each
// frame's length and body apart, so a body read starts with the xid, -2 for
// a ping).
type pingConn struct {
	net.Conn
	pings chan<- time.Time
}

func (c *pingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n >= 16 && int32(binary.BigEndian.Uint32(p)) == -2 {
		select {
		case c.pings <- time.Now():
		default:
		}
	}
	return n, err
}

// resumeZK resumes ZooKeeper server n (at addr) and waits until it serves
// again, so that the tests that follow find the whole ensemble.
func resumeZK(t *testing.T, n int, addr string) {
	testenv.Fault(t, "resume", "zk", strconv.Itoa(n))
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(30 * time.Second)
	for testenv.ZKMode(t, addr) == "" {
		select {
		case <-tick.C:
		case <-timeout:
			t.Errorf("zk %d does not serve 30s after its resume", n)
			return
		}
	}
}
