package zookeeper

import "time"

// A session's Deadline rests on a request the ensemble leader has counted.
// The leader expires a session one timeout after its own last touch of it,
// but a follower does not forward the sessions its clients reached: it
// answers a request (a ping included) at once and reports the sessions it
// heard from only in its reply to the leader's next ping, which the leader
// sends every tickTime/2. A follower stopped between the two (a pause, a
// crash, a cut from the leader) has answered a request the leader never
// counts, and the session may expire up to one client ping interval before
// a Deadline taken from that answer. See Learner.ping and
// LearnerSessionTracker in
// https://github.com/apache/zookeeper/tree/master/zookeeper-server/src/main/java/org/apache/zookeeper/server/quorum.
//
// So an answered request becomes the Deadline's basis only once the same
// connection has answered a request sent at least a report lag after that
// answer arrived: TTL/4, so that the server ran long enough after it had
// the first request to reply to a ping of the leader's (it had one if it
// was connected to a leader that pings every TTL/4 or more often), or the
// ensemble's Timing.ReportLag if longer, so that the leader ran long enough
// after it to read that reply (a follower answers for syncLimit × tickTime
// after it last heard from its leader; see section Safety of
// docs/design/zookeeper.md). A handshake's answer counts at once: a new session is
// made by the leader, and a reconnection with an existing session is
// revalidated by it, which touches the session.

// reportLagDivisor sets the least report lag to the session timeout over
// it: TTL/4 is
// tickTime/2 or more on every ensemble whose minSessionTimeout is its
// default, 2×tickTime, since such an ensemble grants no timeout below that;
// and it leaves a twelfth of the timeout for the round trip of the next
// ping, which go-zookeeper sends a third of the timeout after the last.
const reportLagDivisor = 4

// reportSlots is how many unconfirmed answers a session keeps per reportLag
// of requests: an answer to a request sent within reportLag/reportSlots
// after the newest kept one's merges into it, which delays that one's
// confirmation by no more than that. Twice as many are kept at most.
const reportSlots = 16

// answer is a request the servers answered: when it was sent, and when its
// reply arrived.
type answer struct {
	sent, at time.Time
}

// reports holds the answers of a session's current connection that are not
// yet known to have reached the ensemble leader, and the Deadline's basis.
// Its methods are called with the session's mutex held.
type reports struct {
	basis   time.Time // send time of the newest answered request the leader counted
	pending []answer  // unconfirmed, oldest first; sent and at both increase
}

// linked records a handshake written at sent and answered: the leader
// counted it, and the answers of the previous connection, all older, can
// no longer be confirmed by this one.
func (r *reports) linked(sent time.Time) {
	r.pending = r.pending[:0]
	if sent.After(r.basis) {
		r.basis = sent
	}
}

// answered records the reply, arrived at at, to a request written at sent.
// It first confirms every pending answer that arrived at least lag before
// sent.
func (r *reports) answered(sent, at time.Time, lag time.Duration) {
	n := 0
	for n < len(r.pending) && !sent.Before(r.pending[n].at.Add(lag)) {
		if s := r.pending[n].sent; s.After(r.basis) {
			r.basis = s
		}
		n++
	}
	r.pending = append(r.pending[:0], r.pending[n:]...)
	if !sent.After(r.basis) {
		return // nothing newer to prove
	}
	if k := len(r.pending); k > 0 && (k >= 2*reportSlots || sent.Sub(r.pending[k-1].sent) < lag/reportSlots) {
		// Keep the older send time and wait for the later arrival: the
		// merged answer is confirmed no earlier than either would be, and
		// moves the basis no further.
		if at.After(r.pending[k-1].at) {
			r.pending[k-1].at = at
		}
		return
	}
	r.pending = append(r.pending, answer{sent: sent, at: at})
}
