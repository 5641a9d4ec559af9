package zookeeper

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leaderkit/elector/backend"
	"golang.org/x/sync/singleflight"
)

// Backend is a [backend.Backend] over ZooKeeper sessions: one per distinct
// Candidate.TTL, made at the first Campaign with that TTL and shared by every
// lease of that TTL, so that a session's liveness renews all of them. It
// owns the sessions' zk.Conns, so it sees every connection-state change. It
// also implements [backend.Watcher].
//
// All methods are safe for concurrent use.
type Backend struct {
	servers []string
	cfg     config

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // calls in flight

	mu       sync.Mutex
	closed   bool
	sessions map[time.Duration]*session // campaign sessions, by the timeout asked
	reads    *session                   // Leader and Watch's own, when no campaign session serves
	made     uint64                     // sessions made so far
	leases   map[*lease]struct{}        // held leases

	timing   learned            // the ensemble's timing, once a server reported it (timing.go)
	dirs     knownDirs          // znodes known to exist (dirs.go)
	ensuring singleflight.Group // creations of znodes in flight, by path
}

var _ backend.Backend = (*Backend)(nil)
var _ backend.Watcher = (*Backend)(nil)

// New returns a Backend for the ZooKeeper ensemble servers ("host:port"
// each). It connects nothing yet: the first Campaign with a given TTL opens
// the session of that TTL, and calls wait for their session under their own
// contexts.
//
// New creates and owns its ZooKeeper sessions rather than take the caller's
// zk.Conn, because a ZooKeeper session timeout is fixed when the session is
// made, and the Backend needs one session per distinct TTL. Close ends them
// all.
func New(servers []string, opts *Options) (*Backend, error) {
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("zookeeper: %w: no servers given; want at least one \"host:port\"", backend.ErrInvalid)
	}
	return &Backend{
		servers:  append([]string(nil), servers...),
		cfg:      cfg,
		done:     make(chan struct{}),
		sessions: make(map[time.Duration]*session),
		leases:   make(map[*lease]struct{}),
	}, nil
}

// Close ends every session of b: the servers delete their candidate znodes
// at once, so waiting candidates elsewhere are elected without waiting for a
// session timeout. Leases from b are lost (their Lost channels close);
// Campaign, Leader and Watch return errors wrapping [backend.ErrClosed]
// afterwards. Close is idempotent and waits for the Backend's goroutines.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		close(b.done)
		sessions := make([]*session, 0, len(b.sessions)+1)
		for _, s := range b.sessions {
			sessions = append(sessions, s)
		}
		if b.reads != nil {
			sessions = append(sessions, b.reads)
		}
		leases := make([]*lease, 0, len(b.leases))
		for l := range b.leases {
			leases = append(leases, l)
		}
		b.mu.Unlock()
		for _, l := range leases {
			l.end(false, false)
		}
		for _, s := range sessions {
			s.close()
		}
		b.wg.Wait()
	})
	return nil
}

// campaignSession returns the session for leases of ttl, made at the first
// call with that ttl. When the ensemble grants that session a timeout other
// than ttl, it is closed and the error wraps [backend.ErrInvalid].
func (b *Backend) campaignSession(ctx context.Context, ttl time.Duration) (*session, error) {
	timeout, err := b.cfg.sessionTimeout(ttl)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	s := b.sessions[timeout]
	if s == nil && !b.closed {
		if s, err = b.newSessionLocked(timeout); err == nil {
			b.sessions[timeout] = s
		}
	}
	b.mu.Unlock()
	if s == nil {
		if err == nil {
			err = errClosed
		}
		return nil, err
	}
	if err := b.ready(ctx, s); err != nil {
		return nil, err
	}
	if s.granted != timeout {
		b.drop(s)
		return nil, errGranted(timeout, s.granted)
	}
	// Asked once a session is up, so that a refusal never hides why no
	// server can be reached.
	timing, err := b.Timing(ctx)
	if err != nil {
		return nil, err
	}
	if err := timing.checkTTL(timeout); err != nil {
		b.drop(s)
		return nil, err
	}
	s.setLag(timing.ReportLag())
	return s, nil
}

// reader returns the session Leader and Watch use: the oldest campaign
// session the ensemble accepted, if any, else the Backend's own read
// session, made at first use.
func (b *Backend) reader(ctx context.Context) (*session, error) {
	b.mu.Lock()
	var s *session
	for _, c := range b.sessions {
		if c.accepted() && (s == nil || c.seq < s.seq) {
			s = c
		}
	}
	var err error
	switch {
	case b.closed:
		s, err = nil, errClosed
	case s == nil && b.reads == nil:
		b.reads, err = b.newSessionLocked(readTimeout)
		s = b.reads
	case s == nil:
		s = b.reads
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s, b.ready(ctx, s)
}

func (b *Backend) newSessionLocked(timeout time.Duration) (*session, error) {
	b.made++
	s, err := newSession(b.servers, timeout, b.made, &b.cfg)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ready waits until s can be used; a session that cannot (its credentials
// were refused) is dropped, so that the next call makes a new one. While
// no server can be reached it fails with an error naming the last
// connection problem rather than wait out ctx (see [Backend.connecting]).
func (b *Backend) ready(ctx context.Context, s *session) error {
	select {
	case <-b.done:
		return errClosed
	case <-s.ready:
	default:
		if err := b.connecting(ctx, s); err != nil {
			return err
		}
	}
	err := s.wait(ctx)
	if err != nil && ctx.Err() == nil {
		b.drop(s)
		return mapErr(b.done, err)
	}
	return err
}

// drop forgets s and closes it.
func (b *Backend) drop(s *session) {
	b.mu.Lock()
	if b.sessions[s.asked] == s {
		delete(b.sessions, s.asked)
	}
	if b.reads == s {
		b.reads = nil
	}
	b.mu.Unlock()
	s.close()
}

// track registers a held lease; it fails once b is closed.
func (b *Backend) track(l *lease) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	b.leases[l] = struct{}{}
	return nil
}

// forget unregisters a lease that ended.
func (b *Backend) forget(l *lease) {
	b.mu.Lock()
	delete(b.leases, l)
	b.mu.Unlock()
}

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
		return r.v, mapErr(b.done, r.err)
	case <-ctx.Done():
		stop = ctx.Err()
	case <-b.done:
		stop = errClosed
	}
	if state.CompareAndSwap(0, 2) {
		return zero, stop
	}
	r := <-ch
	return r.v, mapErr(b.done, r.err)
}

// electionPath returns the znode of an election.
func (b *Backend) electionPath(election string) string {
	return b.cfg.prefix + "/" + election
}
