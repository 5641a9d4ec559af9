package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// Backend is a [backend.Backend] over one ZooKeeper session. It owns the
// session's zk.Conn, so it sees every connection-state change, and serves
// any number of elections and candidates over that one session. It also
// implements [backend.Watcher].
//
// All methods are safe for concurrent use.
type Backend struct {
	cfg  config
	conn *zk.Conn

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // goroutines started by the Backend
	kick      chan struct{}  // wakes the housekeeping goroutine

	mu      sync.Mutex
	closed  bool
	sess    session
	changed chan struct{}       // closed and replaced on every session change
	leases  map[*lease]struct{} // held leases
	orphans map[string]orphan   // znodes to delete once the session is reachable
	graceT  *time.Timer         // pending end of a DisconnectGrace
	watches chan struct{}       // closed when watches were re-sent on this connection
	linked  time.Time           // when this connection's handshake was answered
}

// orphan is a candidate znode nobody uses, or (prefix set) any child whose
// path starts with the key: a create whose outcome is unknown.
type orphan struct {
	session int64
	prefix  bool
}

// session is what the Backend knows of its ZooKeeper session.
type session struct {
	id      int64         // 0 before the first handshake and after expiry
	timeout time.Duration // negotiated
	heard   time.Time     // send time of the latest request the server answered
	up      bool          // connected with this session
	epoch   uint64        // counts disconnections
}

var _ backend.Backend = (*Backend)(nil)
var _ backend.Watcher = (*Backend)(nil)

// New connects to the ZooKeeper ensemble servers ("host:port" each) and
// returns a Backend that owns the new session. The connection is made in the
// background: New returns at once unless [Options.Auth] is set, and calls
// wait for the session under their own contexts. Close the Backend to end
// the session.
func New(servers []string, opts *Options) (*Backend, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, errors.New("zookeeper: no servers given; want at least one \"host:port\"")
	}
	b := &Backend{
		cfg:     cfg,
		done:    make(chan struct{}),
		kick:    make(chan struct{}, 1),
		changed: make(chan struct{}),
		watches: make(chan struct{}),
		leases:  make(map[*lease]struct{}),
		orphans: make(map[string]orphan),
	}
	dial := cfg.dialer
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, _, err := zk.Connect(servers, cfg.timeout,
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			c, err := dial(network, addr, timeout)
			if err != nil {
				return nil, err
			}
			return newTrackedConn(c, b), nil
		}),
		zk.WithLogger(zkLogger{cfg.logger}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(b.onEvent),
	)
	if err != nil {
		return nil, fmt.Errorf("zookeeper: connect: %w", err)
	}
	b.conn = conn
	b.wg.Add(1)
	go b.housekeep()
	for _, a := range cfg.auth {
		if err := conn.AddAuth(a.Scheme, a.Secret); err != nil {
			b.Close()
			return nil, fmt.Errorf("zookeeper: add %s auth: %w", a.Scheme, err)
		}
	}
	return b, nil
}

// Close ends the session: the servers delete its candidate znodes at once, so
// waiting candidates elsewhere are elected without waiting for a session
// timeout. Leases from b are lost (their Lost channels close); Campaign,
// Leader and Watch return errors wrapping [backend.ErrClosed] afterwards.
// Close is idempotent and waits for the Backend's goroutines.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.done)
		for l := range b.leases {
			b.loseLocked(l, false)
		}
		if b.graceT != nil {
			b.graceT.Stop()
		}
		b.broadcastLocked()
		b.mu.Unlock()
		b.conn.Close()
		b.wg.Wait()
	})
	return nil
}

// handshake implements wireObserver.
func (b *Backend) handshake(id int64, timeout time.Duration, sent time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id == 0 {
		return // expired; the StateExpired event follows
	}
	if id != b.sess.id {
		b.endSessionLocked()
		b.sess = session{id: id, epoch: b.sess.epoch}
	}
	b.sess.timeout = timeout
	if sent.After(b.sess.heard) {
		b.sess.heard = sent
	}
	b.watches = make(chan struct{})
	b.linked = time.Now()
}

// restored implements wireObserver.
func (b *Backend) restored() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.watches:
	default:
		close(b.watches)
	}
}

// settleDelay bounds how long housekeeping waits after a reconnection for
// go-zookeeper to re-send its watches.
const settleDelay = 100 * time.Millisecond

// heard implements wireObserver.
func (b *Backend) heard(sent time.Time) {
	b.mu.Lock()
	if sent.After(b.sess.heard) {
		b.sess.heard = sent
	}
	b.mu.Unlock()
}

// onEvent receives go-zookeeper's events on its connection goroutines; it
// must not block or call the server.
func (b *Backend) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		b.sess.up = true
		if b.graceT != nil {
			b.graceT.Stop()
			b.graceT = nil
		}
		for l := range b.leases {
			l.verify = true
		}
		b.broadcastLocked()
		b.kickLocked()
	case zk.StateExpired:
		b.endSessionLocked()
		b.sess = session{epoch: b.sess.epoch}
		b.broadcastLocked()
	case zk.StateDisconnected:
		if !b.sess.up {
			return
		}
		b.sess.up = false
		b.sess.epoch++
		if b.cfg.grace == 0 {
			for l := range b.leases {
				b.loseLocked(l, true)
			}
		} else {
			epoch, grace := b.sess.epoch, min(b.cfg.grace, b.sess.timeout/2)
			b.graceT = time.AfterFunc(grace, func() { b.graceOver(epoch) })
		}
		b.broadcastLocked()
	}
}

// graceOver ends the leases that rode out a disconnection for too long.
func (b *Backend) graceOver(epoch uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.sess.up || b.sess.epoch != epoch {
		return
	}
	for l := range b.leases {
		b.loseLocked(l, true)
	}
}

// endSessionLocked loses every lease of the current session: its ephemeral
// znodes are gone with it, and so is anything left to clean up.
func (b *Backend) endSessionLocked() {
	for l := range b.leases {
		b.loseLocked(l, false)
	}
	clear(b.orphans)
}

// loseLocked ends l. With keep set its znode may still exist (the session
// may be alive) and is deleted as soon as the session is reachable, so that
// a candidate told it lost cannot keep others waiting.
func (b *Backend) loseLocked(l *lease, keep bool) {
	if l.gone {
		return
	}
	l.gone = true
	close(l.lost)
	delete(b.leases, l)
	if keep && !b.closed {
		b.orphans[l.path] = orphan{session: l.session}
		b.kickLocked()
	}
}

func (b *Backend) broadcastLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Backend) kickLocked() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// state returns a snapshot of the session and a channel closed at its next
// change.
func (b *Backend) state() (session, <-chan struct{}, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess, b.changed, b.closed
}

// abandon schedules the deletion of a candidate znode of the current session
// that no caller will use (with prefix set: of every child whose path starts
// with path).
func (b *Backend) abandon(path string, prefix bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.sess.id == 0 {
		return
	}
	b.orphans[path] = orphan{session: b.sess.id, prefix: prefix}
	b.kickLocked()
}

// housekeep deletes abandoned znodes and checks leases that rode out a
// disconnection, each time the session (re)connects or work is queued. This
// is the only work the driver does on its own: Curator's "guaranteed delete".
func (b *Backend) housekeep() {
	defer b.wg.Done()
	for {
		select {
		case <-b.done:
			return
		case <-b.kick:
		}
		// go-zookeeper reads its last zxid to re-send watches after a
		// reconnection while its receive loop may write it (an upstream data
		// race, go-zookeeper/zk#35): let it finish before sending requests.
		b.mu.Lock()
		watches, settled := b.watches, time.Until(b.linked.Add(settleDelay))
		b.mu.Unlock()
		if settled > 0 {
			t := time.NewTimer(settled)
			select {
			case <-watches:
			case <-t.C:
			case <-b.done:
				t.Stop()
				return
			}
			t.Stop()
		}
		b.mu.Lock()
		sess := b.sess
		work := make(map[string]orphan)
		for p, o := range b.orphans {
			if o.session != sess.id {
				delete(b.orphans, p)
			} else {
				work[p] = o
			}
		}
		var check []*lease
		for l := range b.leases {
			if l.verify {
				l.verify = false
				check = append(check, l)
			}
		}
		b.mu.Unlock()
		if !sess.up {
			continue
		}
		for p, o := range work {
			if b.deleteOrphan(p, o) {
				b.mu.Lock()
				if b.orphans[p] == o {
					delete(b.orphans, p)
				}
				b.mu.Unlock()
			}
		}
		for _, l := range check {
			ok, st, err := b.conn.Exists(l.path)
			if err != nil {
				continue // the next reconnection checks again
			}
			if !ok || st.EphemeralOwner != l.session {
				b.mu.Lock()
				b.loseLocked(l, false)
				b.mu.Unlock()
			}
		}
	}
}

// deleteOrphan deletes the znode p, or every child of p's parent whose path
// starts with p, and reports whether nothing is left to do.
func (b *Backend) deleteOrphan(p string, o orphan) bool {
	paths := []string{p}
	if o.prefix {
		dir := p[:strings.LastIndexByte(p, '/')]
		kids, _, err := b.conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			return true
		}
		if err != nil {
			return false
		}
		paths = paths[:0]
		for _, k := range kids {
			if strings.HasPrefix(dir+"/"+k, p) {
				paths = append(paths, dir+"/"+k)
			}
		}
	}
	for _, p := range paths {
		if err := b.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return false
		}
	}
	return true
}

// errClosed is returned by calls on a closed Backend.
var errClosed = fmt.Errorf("zookeeper: %w", backend.ErrClosed)

// do runs op on its own goroutine so that the caller can stop waiting when
// ctx ends or the Backend closes (go-zookeeper calls take no context). If
// the caller stops waiting, late (when not nil) receives op's outcome, so
// that a create nobody waits for is undone.
func do[T any](b *Backend, ctx context.Context, op func() (T, error), late func(T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var state atomic.Int32 // 0 running, 1 delivered, 2 abandoned
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return zero, errClosed
	}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		v, err := op()
		if state.CompareAndSwap(0, 1) {
			ch <- result{v, err}
		} else if late != nil {
			late(v, err)
		}
	}()
	var stop error
	select {
	case r := <-ch:
		return r.v, b.mapErr(r.err)
	case <-ctx.Done():
		stop = ctx.Err()
	case <-b.done:
		stop = errClosed
	}
	if state.CompareAndSwap(0, 2) {
		return zero, stop
	}
	r := <-ch
	return r.v, b.mapErr(r.err)
}

// mapErr turns go-zookeeper's shutdown errors into [backend.ErrClosed] once
// the Backend is closed.
func (b *Backend) mapErr(err error) error {
	if err == nil {
		return nil
	}
	select {
	case <-b.done:
		if errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrClosing) {
			return errClosed
		}
	default:
	}
	return err
}

// driftAllowance is subtracted from the session timeout in every local
// deadline: 1% of it plus 2ms, for clock-rate differences between this
// process and the ZooKeeper leader.
func driftAllowance(timeout time.Duration) time.Duration {
	return timeout/100 + 2*time.Millisecond
}

// electionPath returns the znode of an election.
func (b *Backend) electionPath(election string) string {
	return b.cfg.root + "/" + election
}
