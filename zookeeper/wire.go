package zookeeper

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The ZooKeeper client protocol is a stream of frames, each a 4-byte
// big-endian length and a body. The first frame each way is the session
// handshake (ConnectRequest / ConnectResponse); every later request body
// starts with its xid, and every reply with (xid, zxid, err). go-zookeeper
// hides two facts the driver needs for a sound local deadline: the session
// timeout the server negotiated, and when the server last answered (pings
// included). trackedConn reads both off the wire without changing a byte.

const (
	xidSetWatches = -8
	xidWatchEvent = -1
	opCreateReq   = 1    // the request type of a plain create
	opContainer   = 19   // the request type of a create of a container znode
	errCodeExpiry = -112 // SESSIONEXPIRED
	errCodeMoved  = -118 // SESSIONMOVED
)

// wireObserver receives what a trackedConn learns.
type wireObserver interface {
	// handshake reports a ConnectResponse: the session (0 = expired) and
	// negotiated timeout, for a ConnectRequest written at sent.
	handshake(session int64, timeout time.Duration, sent time.Time)
	// heard reports a reply from the server to a request written at sent.
	heard(sent time.Time)
	// restored reports that go-zookeeper re-sent its watches after a
	// reconnection (a SetWatches request went out).
	restored()
	// wroteCreate reports that a create request is being written: a
	// request queued after this call reaches the server after it.
	wroteCreate()
	// wroteContainer reports that a request to create the container znode
	// path is being written (path is "" when it does not fit the head a
	// frameParser collects): a request queued after this call reaches the
	// server after it.
	wroteContainer(path string)
	// created reports the zxid of a create of a protected candidate znode
	// (named <dir>/_c_<uuid>-...) that succeeded: the zxid in its reply's
	// header, which is the znode's czxid.
	created(uuid string, zxid int64)
}

// headMax is how many bytes of each frame body a frameParser collects:
// enough for the reply header and for the path of a create request up to
// the candidate's protection uuid under any usual election name.
const headMax = 256

// frameParser splits a byte stream into frames and collects the first bytes
// of each body.
type frameParser struct {
	lenBuf  [4]byte
	lenHave int
	left    int // body bytes still to come
	head    [headMax]byte
	headLen int // bytes of head wanted for this frame
	have    int
	frames  int // frames completed or begun
}

// feed consumes p and calls done(frameIndex, head) once per frame when its
// head is complete (or the frame ends first).
func (f *frameParser) feed(p []byte, done func(n int, head []byte)) {
	for len(p) > 0 {
		if f.lenHave < 4 {
			k := copy(f.lenBuf[f.lenHave:], p)
			f.lenHave += k
			p = p[k:]
			if f.lenHave < 4 {
				return
			}
			f.left = int(binary.BigEndian.Uint32(f.lenBuf[:]))
			f.headLen = min(f.left, len(f.head))
			f.have = 0
			if f.headLen == 0 {
				done(f.frames, nil)
			}
		}
		if f.have < f.headLen {
			k := copy(f.head[f.have:f.headLen], p)
			f.have += k
			f.left -= k
			p = p[k:]
			if f.have == f.headLen {
				done(f.frames, f.head[:f.headLen])
			}
		} else {
			k := min(f.left, len(p))
			f.left -= k
			p = p[k:]
		}
		if f.left == 0 && f.have == f.headLen {
			f.frames++
			f.lenHave = 0
		}
	}
}

// trackedConn wraps one TCP connection of a go-zookeeper Conn.
type trackedConn struct {
	net.Conn
	obs     wireObserver
	resumed bool          // the connection resumes a session: see awaitRestore
	rewatch chan struct{} // closed when the SetWatches request is written
	once    sync.Once     // closes rewatch
	held    atomic.Bool   // a resumed session's handshake was answered: the next Read awaits the restore
	holdFor atomic.Int64  // how long that Read waits at most: holdBound of the handshake's timeout

	mu      sync.Mutex
	w, r    frameParser
	sent    map[int32][]time.Time // xid → write times, oldest first
	creates map[int32]string      // xid → uuid of a protected create in flight
	connect time.Time             // when the handshake was written
}

// newTrackedConn wraps c; resumed tells that it resumes a session that
// had a handshake before.
func newTrackedConn(c net.Conn, obs wireObserver, resumed bool) *trackedConn {
	tc := &trackedConn{Conn: c, obs: obs, resumed: resumed, rewatch: make(chan struct{}),
		sent: make(map[int32][]time.Time), creates: make(map[int32]string)}
	tc.holdFor.Store(int64(restoreWait)) // until a handshake answer names the timeout
	return tc
}

// restoreWait bounds how long awaitRestore holds the replies of a resumed
// session: go-zookeeper re-sends no watches when it holds none. Only a
// session without watches waits it out; one with watches, a held lease's
// or a waiting candidate's, is released by its SetWatches request, which
// a loaded host (the race detector, a dozen processes on two cores) can
// delay past a quarter of a second. A short session holds for at most an
// eighth of its timeout (holdBound).
const restoreWait = time.Second

// holdBound is the hold of a resumed session whose handshake answered
// timeout: restoreWait, or an eighth of the timeout when that is shorter.
// go-zookeeper reads each reply within two thirds of the timeout (its
// recvTimeout, a read deadline set before the Read the hold delays), so the
// hold must leave most of that: at a 2 s timeout a 1 s hold left a third of
// a second, which a loaded host can spend, and a connection that misses
// its deadline reconnects, to be held again.
func holdBound(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return restoreWait
	}
	return min(restoreWait, timeout/8)
}

// awaitRestore holds the first reply after a resumed session's handshake
// until go-zookeeper has written its SetWatches request, or for holdFor.
// go-zookeeper v1.0.4 reads its last zxid for that request while its
// receive loop, already started, may write it for a reply, with nothing
// between the two: a data race that -race reports (conn.go 614 against
// 849). The request's write orders the read before any reply.
func (c *trackedConn) awaitRestore() {
	t := time.NewTimer(time.Duration(c.holdFor.Load()))
	defer t.Stop()
	select {
	case <-c.rewatch:
	case <-t.C:
	}
	c.held.Store(false)
}

// Write records the send time of each request before it leaves, so that a
// reply proves the server heard from the session no earlier than that.
func (c *trackedConn) Write(p []byte) (int, error) {
	now := time.Now()
	restored, created := false, false
	var containers []string
	c.mu.Lock()
	c.w.feed(p, func(n int, head []byte) {
		switch {
		case n == 0:
			c.connect = now
		case len(head) >= 4:
			xid := int32(binary.BigEndian.Uint32(head))
			c.sent[xid] = append(c.sent[xid], now)
			restored = restored || xid == xidSetWatches
			if len(head) < 8 {
				break
			}
			switch int32(binary.BigEndian.Uint32(head[4:])) {
			case opCreateReq:
				created = true
				if uuid := protectedUUID(head); uuid != "" {
					c.creates[xid] = uuid
				}
			case opContainer:
				path, whole := requestPath(head)
				if !whole {
					path = nil
				}
				containers = append(containers, string(path))
			}
		}
	})
	c.mu.Unlock()
	if restored {
		c.once.Do(func() { close(c.rewatch) })
		c.obs.restored()
	}
	if created {
		c.obs.wroteCreate()
	}
	for _, p := range containers {
		c.obs.wroteContainer(p)
	}
	return c.Conn.Write(p)
}

// Read passes replies through and reports, for each, the send time of the
// request it answers.
func (c *trackedConn) Read(p []byte) (int, error) {
	if c.held.Load() {
		c.awaitRestore()
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		var events []func()
		c.mu.Lock()
		c.r.feed(p[:n], func(i int, head []byte) {
			if i == 0 {
				if c.resumed {
					c.held.Store(true)
				}
				// ConnectResponse: protocolVersion, timeOut, sessionId.
				if len(head) < 16 {
					return
				}
				timeout := time.Duration(int32(binary.BigEndian.Uint32(head[4:]))) * time.Millisecond
				c.holdFor.Store(int64(holdBound(timeout)))
				session := int64(binary.BigEndian.Uint64(head[8:]))
				sent := c.connect
				events = append(events, func() { c.obs.handshake(session, timeout, sent) })
				return
			}
			if len(head) < 16 {
				return
			}
			xid := int32(binary.BigEndian.Uint32(head))
			code := int32(binary.BigEndian.Uint32(head[12:]))
			if xid == xidWatchEvent {
				return
			}
			if uuid, ok := c.creates[xid]; ok {
				delete(c.creates, xid)
				if code == 0 {
					zxid := int64(binary.BigEndian.Uint64(head[4:]))
					events = append(events, func() { c.obs.created(uuid, zxid) })
				}
			}
			q := c.sent[xid]
			if len(q) == 0 {
				return
			}
			sent := q[0]
			if len(q) == 1 {
				delete(c.sent, xid)
			} else {
				c.sent[xid] = q[1:]
			}
			if code != errCodeExpiry && code != errCodeMoved {
				events = append(events, func() { c.obs.heard(sent) })
			}
		})
		c.mu.Unlock()
		for _, e := range events {
			e()
		}
	}
	return n, err
}

// protectedUUID returns the protection uuid of the create request whose
// body starts with head (xid, type, path length, path), or "" when its path
// has none within head.
func protectedUUID(head []byte) string {
	path, _ := requestPath(head)
	i := bytes.LastIndex(path, []byte("/"+protectedPrefix))
	if i < 0 || len(path) < i+1+len(protectedPrefix)+36 {
		return ""
	}
	return string(path[i+1+len(protectedPrefix) : i+1+len(protectedPrefix)+36])
}

// requestPath returns the path of the request whose body starts with head
// (xid, type, path length, path), as far as head holds it, and whether
// head holds all of it.
func requestPath(head []byte) ([]byte, bool) {
	if len(head) < 12 {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(head[8:])))
	path := head[12:]
	if n < 0 || n > len(path) {
		return path, false
	}
	return path[:n], true
}
