package zookeeper

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"
)

// TestDispatcherJudgesByCurrentState: the session's dispatcher applies to
// a lease the session's state as it is, never one it read before the lease
// was made. The dispatcher used to keep the state it had last read and
// apply it to every lease each time it woke, whatever woke it; when a watch
// event woke it before it had read the session's new id, it took a fresh
// leader's lease for one of an expired session and ended it (cmd/elect's
// TestOnceRunsExactlyOnce/zk saw a ZooKeeper leader lose its term 42 ms in).
// The window here is a handshake whose session event has not come yet.
func TestDispatcherJudgesByCurrentState(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &Backend{leases: make(map[*lease]struct{})}
		s := &session{
			asked:   2 * time.Second,
			grace:   time.Second, // a session not yet up does not end its leases
			changed: make(chan struct{}),
			kick:    make(chan struct{}, 1),
			done:    make(chan struct{}),
		}
		s.wg.Add(1)
		go s.dispatch()
		stop := func() {
			s.mu.Lock()
			if !s.st.closed {
				s.st.closed = true
				s.broadcastLocked()
				close(s.done)
			}
			s.mu.Unlock()
			s.wg.Wait()
		}
		defer stop()
		synctest.Wait() // the dispatcher has read the state: no session yet

		const id = 7
		s.handshake(id, s.asked, time.Now())
		newLease := func(dir string) *lease {
			l := &lease{b: b, s: s, dir: dir, name: "c", path: dir + "/c", session: id, lost: make(chan struct{})}
			b.leases[l] = struct{}{}
			return l
		}
		held, ended := newLease("/held"), newLease("/ended")
		ended.end(false, false)
		s.watchFor(held, &intent{dir: held.dir}, 0)
		s.mu.Lock()
		s.queueLocked(ended) // wakes the dispatcher, as a watch event would
		s.mu.Unlock()
		synctest.Wait()
		if lost(held) {
			t.Fatal("the dispatcher ended a lease of the session's new id, judging it by the state it read before the handshake")
		}

		s.onEvent(zk.Event{Type: zk.EventSession, State: zk.StateHasSession})
		synctest.Wait()
		if lost(held) {
			t.Fatal("the session's event ended a lease of its own id")
		}

		stop()
		if !lost(held) {
			t.Error("closing the session did not end its lease")
		}
	})
}
