package zookeeper

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/leaderkit/elector/backend"
)

// session is one ZooKeeper session of a Backend, made with one requested
// timeout. It owns its zk.Conn, and with it everything known of the session:
// its id, negotiated timeout, when the servers last answered, whether it is
// connected, how often it was disconnected, and the DisconnectGrace timer.
// Campaigns read its [state] and wait on the channel that [session.state]
// returns, which is closed at every change; its held leases are followed by
// its one dispatcher goroutine (see dispatch.go).
//
// go-zookeeper re-establishes the session after a connection loss, and opens
// a new one with the same requested timeout after an expiry; the session
// value lives on across both, with a new id after an expiry.
type session struct {
	conn    *zk.Conn
	asked   time.Duration // the session timeout requested (a Candidate.TTL)
	grace   time.Duration // Options.DisconnectGrace
	seq     uint64        // order of creation within the Backend
	janitor *housekeeper  // deletes znodes nobody uses
	// problems is the last connection problem, for errors.
	problems *problems

	ready    chan struct{} // closed once the first handshake and auth are done
	readyErr error         // why the session cannot be used; set before ready closes
	granted  time.Duration // timeout negotiated at the first handshake; set before ready closes

	done      chan struct{} // closed by close
	closeOnce sync.Once
	wg        sync.WaitGroup // the session's goroutines

	mu         sync.Mutex
	st         state
	changed    chan struct{}        // closed and replaced at every change of st
	graceT     *time.Timer          // pending end of a DisconnectGrace
	watches    chan struct{}        // closed when watches were re-sent on this connection
	linked     time.Time            // when this connection's handshake was answered
	createSent chan struct{}        // closed when a create request is written
	containers map[string]*awaited  // create-container requests awaited, by path
	zxids      map[string]int64     // protection uuid → czxid of its create, 0 until known
	probing    *probe               // the renewal request in flight, if any (see fresh)
	leases     map[string]*lease    // by election znode, for the events of their watches (dispatch.go)
	intents    map[string][]*intent // of Campaigns, by election znode (dispatch.go)
	queue      []*lease             // leases to check, for dispatch
	kick       chan struct{}        // wakes dispatch when queue grows
	reports    reports              // answers not yet known to the ensemble leader; the Deadline's basis
	lag        time.Duration        // the ensemble's report lag (Timing.ReportLag), once known
}

// state is what a session knows of itself at one instant.
type state struct {
	id      int64         // 0 before the first handshake and after expiry
	timeout time.Duration // negotiated
	heard   time.Time     // send time of the latest request the server answered
	up      bool          // connected with this session
	epoch   uint64        // counts disconnections
	lapsed  bool          // disconnected for longer than the grace, this epoch
	closed  bool          // closed by the Backend
}

// newSession starts connecting to servers with session timeout asked, and
// returns at once; ready is closed when the session can be used.
func newSession(servers []string, asked time.Duration, seq uint64, cfg *config) (*session, error) {
	s := &session{
		asked:    asked,
		grace:    cfg.grace,
		seq:      seq,
		ready:    make(chan struct{}),
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		watches:  make(chan struct{}),
		kick:     make(chan struct{}, 1),
		problems: &problems{servers: servers},
	}
	dial := cfg.dialer
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, _, err := zk.Connect(servers, asked,
		zk.WithDialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			c, err := dial(network, addr, timeout)
			s.problems.dialed(addr, err)
			if err != nil {
				return nil, err
			}
			st, _ := s.state()
			return newTrackedConn(c, s, st.id != 0), nil
		}),
		zk.WithLogger(problemLogger{s.problems, zkLogger{cfg.logger}}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(s.onEvent),
	)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s.conn = conn
	s.janitor = newHousekeeper(s)
	s.wg.Add(3)
	go s.setup(cfg.auth)
	go s.janitor.run()
	go s.dispatch()
	return s, nil
}

// setup waits for the first handshake, adds the credentials, and closes
// ready.
func (s *session) setup(auth []Auth) {
	defer s.wg.Done()
	defer close(s.ready)
	for {
		st, changed := s.state()
		if st.closed {
			s.readyErr = errClosed
			return
		}
		if st.up && st.id != 0 {
			s.granted = st.timeout
			break
		}
		<-changed
	}
	for _, a := range auth {
		if err := s.conn.AddAuth(a.Scheme, a.Secret); err != nil {
			s.readyErr = fmt.Errorf("add %s auth: %w", a.Scheme, err)
			return
		}
	}
}

// wait waits until the session can be used, or ctx ends.
func (s *session) wait(ctx context.Context) error {
	select {
	case <-s.ready:
		return s.readyErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// accepted reports whether the session is ready and was granted the timeout
// it asked for.
func (s *session) accepted() bool {
	select {
	case <-s.ready:
		return s.readyErr == nil && s.granted == s.asked
	default:
		return false
	}
}

// close ends the session at the servers (its ephemeral znodes go at once)
// and waits for its goroutines.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.st.closed = true
		if s.graceT != nil {
			s.graceT.Stop()
		}
		s.broadcastLocked()
		s.mu.Unlock()
		close(s.done)
		s.conn.Close()
		s.wg.Wait()
	})
}

// state returns a snapshot of the session and a channel closed at its next
// change.
func (s *session) state() (state, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, s.changed
}

// deadline is the latest instant session id can still be alive at the
// servers: [backend.LeaseDeadline] of the send time of the newest answered
// request the ensemble leader is known to have counted (see report.go) and
// the negotiated timeout. It reports false once id is not the current
// session.
func (s *session) deadline(id int64, drift float64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.id != id || s.st.closed {
		return time.Time{}, false
	}
	return backend.LeaseDeadline(s.reports.basis, s.st.timeout, drift), true
}

// abandon has the znode path of the current session deleted as soon as the
// session is reachable (with prefix set: every child whose path starts with
// path).
func (s *session) abandon(path string, prefix bool) {
	st, _ := s.state()
	s.janitor.abandon(path, st.id, prefix)
}

// settleDelay bounds how long a session waits after a reconnection for
// go-zookeeper to re-send its watches.
const settleDelay = 100 * time.Millisecond

// settle waits after a reconnection until go-zookeeper has re-sent its
// watches, for at most settleDelay: it reads its last zxid to re-send them
// while its receive loop may write it (an upstream data race,
// https://github.com/go-zookeeper/zk/issues/35), so requests wait for it.
// It reports false if the session closed meanwhile.
func (s *session) settle() bool {
	s.mu.Lock()
	watches, wait := s.watches, time.Until(s.linked.Add(settleDelay))
	s.mu.Unlock()
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-watches:
	case <-t.C:
	case <-s.done:
		return false
	}
	return true
}

// handshake implements wireObserver.
func (s *session) handshake(id int64, timeout time.Duration, sent time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == 0 {
		return // expired; the StateExpired event follows
	}
	if id != s.st.id {
		s.st = state{id: id, epoch: s.st.epoch, closed: s.st.closed}
	}
	s.st.timeout = timeout
	if sent.After(s.st.heard) {
		s.st.heard = sent
	}
	s.reports.linked(sent)
	s.watches = make(chan struct{})
	s.linked = time.Now()
}

// restored implements wireObserver.
func (s *session) restored() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.watches:
	default:
		close(s.watches)
	}
}

// wroteCreate implements wireObserver.
func (s *session) wroteCreate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.createSent != nil {
		close(s.createSent)
		s.createSent = nil
	}
}

// awaited is a channel closed when a request is written, shared by the
// calls that wait for it.
type awaited struct {
	ch      chan struct{}
	waiting int
}

// containerWritten returns a channel closed when a create-container request
// of path is next written, and a func to call when no longer waiting.
func (s *session) containerWritten(path string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.containers == nil {
		s.containers = make(map[string]*awaited)
	}
	w := s.containers[path]
	if w == nil {
		w = &awaited{ch: make(chan struct{})}
		s.containers[path] = w
	}
	w.waiting++
	return w.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.waiting--; w.waiting == 0 && s.containers[path] == w {
			delete(s.containers, path)
		}
	}
}

// wroteContainer implements wireObserver.
func (s *session) wroteContainer(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.containers[path]; w != nil {
		close(w.ch)
		delete(s.containers, path)
	}
}

// created implements wireObserver.
func (s *session) created(uuid string, zxid int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.zxids[uuid]; ok {
		s.zxids[uuid] = zxid
	}
}

// expectCreate has the czxid of the create of the candidate with
// protection uuid recorded for takeCreate.
func (s *session) expectCreate(uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.zxids == nil {
		s.zxids = make(map[string]int64)
	}
	s.zxids[uuid] = 0
}

// takeCreate returns the czxid recorded for uuid (0 if none) and forgets
// it.
func (s *session) takeCreate(uuid string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zxids[uuid]
	delete(s.zxids, uuid)
	return z
}

// nextCreate returns a channel closed when the next create request of the
// session is written.
func (s *session) nextCreate() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.createSent == nil {
		s.createSent = make(chan struct{})
	}
	return s.createSent
}

// heard implements wireObserver.
func (s *session) heard(sent time.Time) {
	s.mu.Lock()
	if sent.After(s.st.heard) {
		s.st.heard = sent
	}
	s.reports.answered(sent, time.Now(), max(s.st.timeout/reportLagDivisor, s.lag))
	s.mu.Unlock()
}

// setLag sets how long after an answer arrived a request must have been
// sent, and answered, for the Deadline to count the first (see report.go):
// the ensemble's report lag, or a quarter of the timeout if longer. It is
// set before a lease uses the session; the answers of its setup, pending
// until then, wait for it too.
func (s *session) setLag(lag time.Duration) {
	s.mu.Lock()
	s.lag = lag
	s.mu.Unlock()
}

// onEvent receives go-zookeeper's events on its connection goroutines; it
// must not block or call the server.
func (s *session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		if ev.Path != "" {
			s.mu.Lock()
			s.nodeEventLocked(ev)
			s.mu.Unlock()
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.closed {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		s.st.up, s.st.lapsed = true, false
		if s.graceT != nil {
			s.graceT.Stop()
			s.graceT = nil
		}
	case zk.StateExpired:
		s.st = state{epoch: s.st.epoch}
	case zk.StateDisconnected:
		if !s.st.up {
			return
		}
		s.st.up = false
		s.st.epoch++
		if s.grace > 0 {
			epoch := s.st.epoch
			s.graceT = time.AfterFunc(min(s.grace, s.st.timeout/2), func() { s.graceOver(epoch) })
		}
	default:
		return
	}
	s.broadcastLocked()
}

// graceOver marks a disconnection that outlasted the grace.
func (s *session) graceOver(epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.closed || s.st.up || s.st.epoch != epoch {
		return
	}
	s.st.lapsed = true
	s.broadcastLocked()
}

func (s *session) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
