package zookeeper

import (
	"context"
	"time"
)

// Renewals shared by the leases of one session. A lease's Renew has two
// things to prove: that the session is alive, and that the lease's znode is
// still there. The second is proved by the children watch that every lease
// keeps on its election's znode (see dispatch.go): go-zookeeper hands each
// watch event to the session's event callback on its receive loop, before
// the reply to any later request, so once a request sent after a Renew
// began is answered, every event that the servers sent before answering it
// has been counted (see lease.watching).
// The first is proved by that one answered request, which the session's
// concurrent renewals share (group commit): a Renew waits for a request of
// the session sent after it began, a ping included, and sends one (its own
// read) only when none is in flight. Renewals that arrive together, as the
// Elector's do when their leases share a session, cost one request.

// probe is one request that a session's concurrent renewals share.
type probe struct {
	sent time.Time     // when the request was sent
	done chan struct{} // closed when it has been answered or has failed
}

// fresh waits until a request of the session sent at or after start has
// been answered, and returns the send time of the newest answered request.
// When none is in flight it calls send, which makes one request (its
// caller's own read); a renewal that arrives while an older request is in
// flight waits for it and then joins, or sends, the next. send's error is
// returned as is: a renewal never takes another lease's outcome for its
// own.
func (s *session) fresh(ctx context.Context, start time.Time, send func(context.Context) error) (time.Time, error) {
	for {
		s.mu.Lock()
		if heard := s.st.heard; !heard.Before(start) {
			s.mu.Unlock()
			return heard, nil
		}
		p := s.probing
		if p == nil {
			p = &probe{sent: time.Now(), done: make(chan struct{})}
			s.probing = p
			s.mu.Unlock()
			err := send(ctx)
			s.mu.Lock()
			s.probing = nil
			heard := s.st.heard
			s.mu.Unlock()
			close(p.done)
			if err != nil {
				return time.Time{}, err
			}
			if heard.Before(p.sent) { // not seen on the wire: the reply is the proof
				heard = p.sent
			}
			return heard, nil
		}
		s.mu.Unlock()
		select {
		case <-p.done:
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}
