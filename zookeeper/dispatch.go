package zookeeper

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// How a held lease learns that its znode is gone, without a request or a
// goroutine of its own. The listing that made a candidate leader (Campaign's
// read of the election's children) is a ChildrenW: it leaves a children
// watch on the election's znode, which fires when a candidate znode is
// added or deleted, the lease's own included. go-zookeeper hands every
// watch event to the session's event callback (session.onEvent), which
// counts it against the lease of that election (watchState) and queues the
// lease for its session's one dispatcher goroutine (session.dispatch). The
// dispatcher lists the children again, re-arming the watch: the lease ends
// if its znode is no longer among them. It also applies the session's
// changes to every lease of the session: expiry and close end them, a
// disconnection ends them under the default policy, a reconnection within
// DisconnectGrace has each one checked again.
//
// An event that arrives between the listing's reply and the lease's
// registration has no lease to count it: each Campaign registers an intent
// for its election before it lists the children, which such events mark,
// so the registration sees them and checks at once.

// intent is a Campaign's interest in the watch events of its election,
// until its lease is registered. Guarded by its session's mu.
type intent struct {
	dir   string
	fired bool // an event of the election came since the last listing began
}

// watchState is what a lease knows of the watch on its election: how many
// of its events the session has counted, and the count at which the watch
// now armed was set (-1 while none is armed). The watch is armed and has not
// fired while the two are equal.
type watchState struct {
	fires atomic.Int64
	armed atomic.Int64
}

// armedAt records a watch set after the session had counted g events (g
// read before the request that set it was sent), or none (ok false). An
// event of that watch comes after the request's reply and moves fires past
// g, so the watch never looks armed once it has fired.
func (w *watchState) armedAt(g int64, ok bool) {
	if !ok {
		g = -1
	}
	w.armed.Store(g)
}

// watching reports whether the election's watch is armed and has not fired.
func (w *watchState) watching() bool {
	a := w.armed.Load()
	return a >= 0 && a == w.fires.Load()
}

// listen registers (in nil) or re-arms a Campaign's intent for election
// znode dir, before each listing of its children.
func (s *session) listen(in *intent, dir string) *intent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in == nil {
		in = &intent{dir: dir}
		if s.intents == nil {
			s.intents = make(map[string][]*intent)
		}
		s.intents[dir] = append(s.intents[dir], in)
	}
	in.fired = false
	return in
}

// unlisten forgets a Campaign's intent.
func (s *session) unlisten(in *intent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ins := slices.DeleteFunc(s.intents[in.dir], func(x *intent) bool { return x == in })
	if len(ins) == 0 {
		delete(s.intents, in.dir)
	} else {
		s.intents[in.dir] = ins
	}
}

// watchFor registers l, whose election's children its Campaign listed
// with a watch (intent in), in disconnection epoch epoch, for the events
// of that watch. If the watch may have fired already, or the session was
// disconnected since, the lease is checked at once.
func (s *session) watchFor(l *lease, in *intent, epoch uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registerLocked(l)
	l.epoch = epoch
	if epoch != s.st.epoch || in.fired {
		l.armedAt(0, false)
		s.queueLocked(l)
		return
	}
	l.armedAt(l.fires.Load(), true)
}

// registerLocked adds l to the session's leases; s.mu is held. The
// dispatcher applies the session's state to its leases only when the state
// changes: if the state already differs from the one l was made in (the
// session disconnected, expired or closed since), l's registration counts
// as a change, so that the dispatcher applies it to l too.
func (s *session) registerLocked(l *lease) {
	if s.leases == nil {
		s.leases = make(map[string]*lease)
	}
	s.leases[l.dir] = l
	if s.st.closed || !s.st.up || s.st.id != l.session {
		s.broadcastLocked()
	}
}

// unwatch forgets l.
func (s *session) unwatch(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.leases[l.dir] == l {
		delete(s.leases, l.dir)
	}
}

// nodeEventLocked counts a watch event of an election's znode, or of a
// candidate's, against the lease held in that election, and queues the
// lease for a check; s.mu is held.
func (s *session) nodeEventLocked(ev zk.Event) {
	dir := ev.Path
	if i := strings.LastIndexByte(ev.Path, '/'); i > 0 && strings.HasPrefix(ev.Path[i+1:], protectedPrefix) {
		dir = ev.Path[:i] // a candidate's own znode
	}
	for _, in := range s.intents[dir] {
		in.fired = true
	}
	l := s.leases[dir]
	if l != nil && dir != ev.Path && l.path != ev.Path {
		l = nil // another candidate's znode
	}
	if l != nil {
		l.fires.Add(1)
		s.queueLocked(l)
	}
}

// queueLocked queues l for the dispatcher to check; s.mu is held.
func (s *session) queueLocked(l *lease) {
	if l.queued {
		return
	}
	l.queued = true
	s.queue = append(s.queue, l)
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// dispatch is the session's one goroutine for its leases: it applies every
// change of the session to them at once, and has the leases whose watch
// fired checked (on a checker goroutine, one at a time, so that a check
// waiting out a disconnection never holds back the session's changes),
// until the session closes.
func (s *session) dispatch() {
	defer s.wg.Done()
	closed, changed := s.followAll()
	checked := make(chan struct{}, 1)
	checking := false
	tick := time.NewTicker(s.asked / probeDivisor)
	defer tick.Stop()
	probed := make(chan struct{}, 1)
	probing := false
	for !closed {
		select {
		case <-changed:
			closed, changed = s.followAll()
		case <-tick.C:
			if !probing && s.quiet() {
				probing = true
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.probe()
					probed <- struct{}{}
				}()
			}
		case <-probed:
			probing = false
		case <-s.kick:
			if !checking {
				checking = true
				s.wg.Add(1)
				go func() {
					defer s.wg.Done()
					s.checkQueued()
					checked <- struct{}{}
				}()
			}
		case <-checked:
			checking = false
			s.mu.Lock()
			if len(s.queue) > 0 {
				select {
				case s.kick <- struct{}{}:
				default:
				}
			}
			s.mu.Unlock()
		}
	}
	if checking {
		<-checked
	}
	if probing {
		<-probed
	}
}

// probeDivisor sets how long a session holding leases goes without an
// answer to a request sent since before it sends one of its own: the
// session timeout over it. A lease's Deadline counts an answer only once a
// later request, sent a quarter of the timeout after it arrived, is
// answered too (see report.go); go-zookeeper's pings, a third of the
// timeout apart, would leave the Deadline trailing by up to seven twelfths
// of it. With a request at least every twelfth, it trails by about a third,
// as it did when every Elector renewed at a quarter of its interval, and
// the request is one per session, whatever the number of its leases.
const probeDivisor = 12

// quiet reports whether the session holds leases, is connected, and has
// had no answer to a request sent within the last half probe period (the
// probe sent at the previous tick is not recent enough to skip this one).
func (s *session) quiet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.leases) > 0 && s.st.up && !s.st.closed && s.st.heard.Before(time.Now().Add(-s.asked/probeDivisor/2))
}

// probe sends one request of the session (shared with its renewals, see
// share.go), bounded by a third of the session timeout.
func (s *session) probe() {
	ctx, cancel := context.WithTimeout(context.Background(), s.asked/3)
	defer cancel()
	_, _ = s.fresh(ctx, time.Now(), func(context.Context) error {
		_, _, err := s.conn.Exists("/")
		return err
	})
}

// followAll applies the session's current state to each of its leases,
// and reports whether the session is closed, and a channel closed at the
// state's next change. The state and the leases are read at one instant:
// a lease is never judged by a state older than the one it was registered
// in (a lease of a session that a stale state predates would look expired).
func (s *session) followAll() (closed bool, changed <-chan struct{}) {
	s.mu.Lock()
	st, changed := s.st, s.changed
	ls := make([]*lease, 0, len(s.leases))
	for _, l := range s.leases {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.follow(st)
	}
	return st.closed, changed
}

// checkWorkers bounds the checks in flight at once, so that the many leases
// checked after a reconnection share round trips.
const checkWorkers = 16

// checkQueued checks the queued leases.
func (s *session) checkQueued() {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	for _, l := range q {
		l.queued = false
	}
	s.mu.Unlock()
	if len(q) == 0 || !s.settle() {
		return
	}
	if len(q) == 1 {
		q[0].check()
		return
	}
	var wg sync.WaitGroup
	work := make(chan *lease)
	for range min(checkWorkers, len(q)) {
		wg.Go(func() {
			for l := range work {
				l.check()
			}
		})
	}
	for _, l := range q {
		work <- l
	}
	close(work)
	wg.Wait()
}

// check lists the children of the lease's election, re-arming the watch:
// the lease ends if its znode is not among them. When the listing fails
// the watch stays disarmed (Renew reads the znode) until the session's
// next reconnection has the lease checked again.
func (l *lease) check() {
	if gone, _ := l.state(); gone {
		return
	}
	g := l.fires.Load()
	kids, _, _, err := l.s.conn.ChildrenW(l.dir)
	switch {
	case err == nil && slices.Contains(kids, l.name), err != nil && !errors.Is(err, zk.ErrNoNode):
		l.armedAt(g, err == nil)
	default:
		l.end(false, false)
	}
}
