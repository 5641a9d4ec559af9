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
	b     *Backend
	id    clientv3.LeaseID
	ttl   time.Duration // as granted
	lost  chan struct{} // closed when the lease is known gone
	once  sync.Once
	users map[string]*lease // by election; guarded by b.mu
	// retired sessions take no new candidates: a key of theirs could not
	// be deleted (see orphans) and must lapse with them.
	retired bool // guarded by b.mu

	mu       sync.Mutex
	sent     time.Time // send time of the newest acknowledged keepalive or grant
	deadline time.Time // sent + TTL × (1 − drift), never moves back
	inflight *keepalive
	orphans  map[string]int64 // key → create revision of keys to delete
}

// reuseFraction: a renewal reuses an acknowledgement sent within the last
// TTL/reuseFraction instead of sending its own.
const reuseFraction = 5

// keepalive is one keepalive request shared by concurrent renewals.
type keepalive struct {
	done chan struct{}
	sent time.Time
	err  error
}

func (b *Backend) newSession(id clientv3.LeaseID, ttlSeconds int64, sent time.Time) *session {
	s := &session{
		b:     b,
		id:    id,
		ttl:   time.Duration(ttlSeconds) * time.Second,
		lost:  make(chan struct{}),
		users: make(map[string]*lease),
	}
	s.ack(sent, ttlSeconds)
	return s
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
	if d := sent.Add(ttl - time.Duration(float64(ttl)*s.b.set.drift)); d.After(s.deadline) {
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
	s.b.mu.Lock()
	users := make([]*lease, 0, len(s.users))
	for _, l := range s.users {
		users = append(users, l)
	}
	s.b.mu.Unlock()
	for _, l := range users {
		l.markLost()
	}
}

// keepAlive makes sure an acknowledgement exists that was sent after the
// instant after and within maxAge, sending one keepalive if needed (shared
// with concurrent callers). It returns the send time of that
// acknowledgement, or an error wrapping [backend.ErrLost] when the server no
// longer knows the lease.
func (s *session) keepAlive(ctx context.Context, maxAge time.Duration, after time.Time) (time.Time, error) {
	for {
		if s.isLost() {
			return time.Time{}, fmt.Errorf("lease %x: %w", int64(s.id), backend.ErrLost)
		}
		s.mu.Lock()
		if sent := s.sent; sent.After(after) && time.Since(sent) < maxAge {
			s.mu.Unlock()
			return sent, nil
		}
		k := s.inflight
		if k == nil {
			k = &keepalive{done: make(chan struct{})}
			s.inflight = k
			s.mu.Unlock()
			k.sent, k.err = s.send(ctx)
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

// send sends one keepalive and, after it, deletes orphaned keys. It
// returns the send time.
func (s *session) send(ctx context.Context) (time.Time, error) {
	if err := s.b.clientClosed(); err != nil {
		return time.Time{}, err
	}
	sent := time.Now()
	resp, err := s.b.cli.KeepAliveOnce(ctx, s.id)
	switch {
	case isLeaseNotFound(err):
		s.markLost()
		return time.Time{}, fmt.Errorf("lease %x: %w", int64(s.id), backend.ErrLost)
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
	s.b.mu.Lock()
	s.retired = true
	s.b.mu.Unlock()
	s.mu.Lock()
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
		if deleteKey(ctx, s.b.cli, k, revs[i]) == nil {
			s.mu.Lock()
			delete(s.orphans, k)
			s.mu.Unlock()
		}
	}
}

// deleteKey deletes key if its create revision is rev, or whatever key is
// there if rev is 0.
func deleteKey(ctx context.Context, cli *clientv3.Client, key string, rev int64) error {
	txn := cli.Txn(ctx)
	if rev != 0 {
		txn = txn.If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev))
	}
	_, err := txn.Then(clientv3.OpDelete(key)).Commit()
	return err
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
