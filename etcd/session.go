package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leaderkit/elector/backend"
)

// A session is one etcd lease shared by the candidates of one Backend: one
// per election at most, so that no two of them write the same key. Nothing
// renews it in the background. It is kept alive by Lease.Renew of the
// leases it carries and by the Campaigns waiting on it, and keepalives are
// shared: a renewal that finds an acknowledgement sent within the last
// TTL/[reuseFraction], newer than the one the renewing lease last used,
// reuses it, and concurrent renewals share one request. A session nobody
// renews lapses at the server after its TTL, as a crashed process's would.
type session struct {
	cli   *clientv3.Client
	drift float64 // Options.DriftFactor
	id    clientv3.LeaseID
	ttl   time.Duration // as granted
	lost  chan struct{} // closed when the lease is known gone
	once  sync.Once

	// earlyRevoke: some member runs an etcd release whose old raft leader
	// can revoke this lease by its own stale clock after a leader change
	// (see revokesEarly).
	earlyRevoke bool

	mu    sync.Mutex
	users map[string]*lease // candidates on this lease, by election
	// retired sessions take no new candidates: a key of theirs could not
	// be deleted (see orphans) and must lapse with them.
	retired  bool
	sent     time.Time // send time of the newest acknowledged keepalive or grant
	deadline time.Time // backend.LeaseDeadline of sent; never moves back
	term     uint64    // raft term of the newest trusted acknowledgement or grant
	// distrust, once set, is why no acknowledgement may move the deadline
	// any more: the raft leader changed while earlyRevoke holds.
	distrust error
	inflight *keepalive
	orphans  map[string]int64 // key → create revision of keys to delete (0: any; orphanUnapplied)
}

// orphanUnapplied, as an orphan's revision, marks a key whose put was sent
// but not answered: it may not exist yet. Keepalives delete whatever key
// is there, and forget the orphan only once a delete found one.
const orphanUnapplied = -1

// reuseFraction: a renewal reuses an acknowledgement sent within the last
// TTL/reuseFraction instead of sending its own.
const reuseFraction = 5

// keepalive is one keepalive request shared by concurrent renewals.
type keepalive struct {
	done chan struct{}
	sent time.Time
	err  error
}

func newSession(cli *clientv3.Client, drift float64, id clientv3.LeaseID, ttlSeconds int64, sent time.Time, term uint64, earlyRevoke bool) *session {
	s := &session{
		cli:         cli,
		drift:       drift,
		id:          id,
		ttl:         time.Duration(ttlSeconds) * time.Second,
		lost:        make(chan struct{}),
		users:       make(map[string]*lease),
		earlyRevoke: earlyRevoke,
		term:        term,
	}
	s.ack(sent, ttlSeconds)
	return s
}

// errEarlyRevoke explains a distrusted session.
var errEarlyRevoke = errors.New("the etcd raft leader changed, and a member runs an etcd release " +
	"(before 3.4.31, 3.5.13 or 3.6.0) whose old leader may still revoke this lease by its own stale clock " +
	"(https://github.com/etcd-io/etcd/issues/15247); the lease is no longer renewed")

// verify decides whether a keepalive acknowledged in raft term ackTerm, and
// followed by a linearizable read served in term readTerm, may move the
// deadline. An acknowledgement is trusted only when the read, which a
// quorum confirmed after it, saw the same term: then no newer leader existed
// when the keepalive was answered, so it was recorded by the lessor that
// decides the lease's expiry (a paused or partitioned old leader answers
// keepalives from its own lessor until it learns of its successor). A newer
// term on a cluster that can revoke early distrusts the session for good:
// the old leader's lessor, which never saw the later keepalives, may still
// revoke the lease when it runs again.
func (s *session) verify(ackTerm, readTerm uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.distrust != nil {
		return s.distrust
	}
	term := max(ackTerm, readTerm)
	if s.earlyRevoke && s.term != 0 && term > s.term {
		s.distrust = fmt.Errorf("lease %x: raft term %d after %d: %w: %w", int64(s.id), term, s.term, errEarlyRevoke, backend.ErrLost)
		return s.distrust
	}
	s.term = max(s.term, term)
	if ackTerm != readTerm {
		return fmt.Errorf("lease %x: keepalive acknowledged in raft term %d, but the cluster is at term %d: not trusted", int64(s.id), ackTerm, readTerm)
	}
	return nil
}

// take records l as the session's candidate for its election if the
// session can carry it: it is alive, trusted, not retired, has no candidate
// for that election yet, and at least half its TTL left at now. It reports
// whether it took l, and whether the session is finished and unused (dead
// and without candidates), so that its owner can forget it.
func (s *session) take(l *lease, now time.Time) (took, unused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := s.deadline.Sub(now)
	dead := s.isLost() || s.distrust != nil || left <= 0
	if dead {
		return false, len(s.users) == 0
	}
	if s.retired || s.users[l.election] != nil || left <= s.ttl/2 {
		return false, false
	}
	s.users[l.election] = l
	return true, false
}

// drop frees l's slot on the session.
func (s *session) drop(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[l.election] == l {
		delete(s.users, l.election)
	}
}

// ack records an acknowledgement of a request sent at sent that left the
// lease ttlSeconds to live.
func (s *session) ack(sent time.Time, ttlSeconds int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sent.After(s.sent) {
		s.sent = sent
	}
	ttl := time.Duration(ttlSeconds) * time.Second
	if d := backend.LeaseDeadline(sent, ttl, s.drift); d.After(s.deadline) {
		s.deadline = d
	}
}

// Deadline returns the session's local deadline.
func (s *session) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// age returns how long ago the newest acknowledged keepalive was sent.
func (s *session) age() time.Duration { return time.Since(s.lastSent()) }

// lastSent returns the send time of the newest acknowledged keepalive.
func (s *session) lastSent() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// isLost reports whether the lease is known gone.
func (s *session) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// markLost records that the lease is gone and finishes every candidate on it.
func (s *session) markLost() {
	s.once.Do(func() { close(s.lost) })
	s.mu.Lock()
	users := make([]*lease, 0, len(s.users))
	for _, l := range s.users {
		users = append(users, l)
	}
	s.mu.Unlock()
	for _, l := range users {
		l.markLost()
	}
}

// recent returns the send time of an acknowledgement sent after the instant
// after and within maxAge, when the session has one, or the error
// keepAlive would return at once; it sends nothing.
func (s *session) recent(maxAge time.Duration, after time.Time) (time.Time, bool, error) {
	if s.isLost() {
		return time.Time{}, false, fmt.Errorf("lease %x: %w", int64(s.id), backend.ErrLost)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.distrust != nil {
		return time.Time{}, false, s.distrust
	}
	if sent := s.sent; sent.After(after) && time.Since(sent) < maxAge {
		return sent, true, nil
	}
	return time.Time{}, false, nil
}

// keepAlive makes sure an acknowledgement exists that was sent after the
// instant after and within maxAge, sending one keepalive if needed (shared
// with concurrent callers). It returns the send time of that
// acknowledgement, or an error wrapping [backend.ErrLost] when the server no
// longer knows the lease.
func (s *session) keepAlive(ctx context.Context, key string, maxAge time.Duration, after time.Time) (time.Time, error) {
	for {
		if sent, ok, err := s.recent(maxAge, after); ok || err != nil {
			return sent, err
		}
		s.mu.Lock()
		k := s.inflight
		if k == nil {
			k = &keepalive{done: make(chan struct{})}
			s.inflight = k
			s.mu.Unlock()
			k.sent, k.err = s.send(ctx, key)
			s.mu.Lock()
			s.inflight = nil
			s.mu.Unlock()
			close(k.done)
			return k.sent, k.err
		}
		s.mu.Unlock()
		select {
		case <-k.done:
			if k.err != nil && isContextError(k.err) && ctx.Err() == nil {
				continue // the caller that sent it gave up; try ourselves
			}
			if k.err == nil && !k.sent.After(after) {
				continue // sent before what the caller already has
			}
			return k.sent, k.err
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// send sends one keepalive, verifies its acknowledgement with a
// linearizable read of key (any key the client may read), and then deletes
// orphaned keys. It returns the send time. Both requests require the
// member to have a raft leader.
func (s *session) send(ctx context.Context, key string) (time.Time, error) {
	if err := clientClosed(s.cli); err != nil {
		return time.Time{}, err
	}
	ctx = clientv3.WithRequireLeader(ctx)
	sent := time.Now()
	resp, err := s.cli.KeepAliveOnce(ctx, s.id)
	if err == nil {
		var rr *clientv3.GetResponse
		rr, err = s.cli.Get(ctx, key, clientv3.WithCountOnly())
		if err == nil {
			err = s.verify(resp.GetRaftTerm(), rr.Header.GetRaftTerm())
		}
	}
	switch {
	case isLeaseNotFound(err):
		s.markLost()
		return time.Time{}, fmt.Errorf("lease %x: %w", int64(s.id), backend.ErrLost)
	case errors.Is(err, backend.ErrLost):
		return time.Time{}, err
	case err != nil:
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		return time.Time{}, fmt.Errorf("keepalive lease %x: %w", int64(s.id), err)
	}
	s.ack(sent, resp.TTL)
	s.deleteOrphans(ctx)
	return sent, nil
}

// orphan records a key whose deletion failed; later keepalives delete it.
// The session is retired so that the key lapses with it once its current
// candidates are gone.
func (s *session) orphan(key string, rev int64) {
	s.mu.Lock()
	s.retired = true
	if s.orphans == nil {
		s.orphans = make(map[string]int64)
	}
	s.orphans[key] = rev
	s.mu.Unlock()
}

func (s *session) deleteOrphans(ctx context.Context) {
	s.mu.Lock()
	var keys []string
	var revs []int64
	for k, r := range s.orphans {
		keys, revs = append(keys, k), append(revs, r)
	}
	s.mu.Unlock()
	for i, k := range keys {
		rev := revs[i]
		if rev == orphanUnapplied {
			rev = 0
		}
		deleted, err := deleteKey(ctx, s.cli, k, rev)
		if err == nil && (deleted || revs[i] != orphanUnapplied) {
			s.mu.Lock()
			delete(s.orphans, k)
			s.mu.Unlock()
		}
	}
}

// deleteKey deletes key if its create revision is rev, or whatever key is
// there if rev is 0.
func deleteKey(ctx context.Context, cli *clientv3.Client, key string, rev int64) (deleted bool, err error) {
	txn := cli.Txn(ctx)
	if rev != 0 {
		txn = txn.If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev))
	}
	resp, err := txn.Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return false, err
	}
	for _, r := range resp.Responses {
		if d := r.GetResponseDeleteRange(); d != nil && d.Deleted > 0 {
			deleted = true
		}
	}
	return deleted, nil
}

// isLeaseNotFound reports whether err says the server does not know the
// lease (it expired or was revoked).
func isLeaseNotFound(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, rpctypes.ErrGRPCLeaseNotFound) {
		return true
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.NotFound {
		return true
	}
	return err.Error() == rpctypes.ErrLeaseNotFound.Error()
}

// isContextError reports whether err is a context error.
func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
