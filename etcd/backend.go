package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leaderkit/elector/backend"
)

// Backend runs elections on an etcd cluster through a client the caller
// configured (endpoints, TLS, username and password). It implements
// [backend.Backend], [backend.Watcher] and [backend.BatchReader]. Create it
// with [New].
//
// All candidates of one Backend with the same TTL share one etcd lease, so
// hundreds of elections cost one keepalive per renewal period. Two
// concurrent Campaigns for the same election on one Backend would write the
// same key on a shared lease; the second one gets a lease of its own, so they
// are two distinct candidates.
type Backend struct {
	cli *clientv3.Client
	cfg config

	base   context.Context // lives until Close; parent of own-key watches
	cancel context.CancelFunc
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup

	servers serverCheck   // whether members can revoke leases early
	regs    registrations // the registry entries Close revokes
	own     ownWatch      // every lease's own-key watch

	// mu guards the fields below; each session guards its own state, and
	// b.mu is never taken while a session's lock is held.
	mu       sync.Mutex
	closed   bool
	sessions map[int64][]*session // by TTL in seconds
	// granting holds, by TTL in seconds, a channel closed when the grant
	// of a new session with that TTL has finished: concurrent Campaigns
	// wait for it instead of granting one session each.
	granting map[int64]chan struct{}
	held     map[heldKey]*lease // won and not yet finished, for Guard

	// txnRanges is how many elections Leaders reads in one Txn:
	// maxTxnRanges until the cluster refuses that many operations, then
	// halved until it accepts them (see Leaders).
	txnRanges atomic.Int64
}

type heldKey struct {
	election string
	token    uint64
}

var (
	_ backend.Backend     = (*Backend)(nil)
	_ backend.Watcher     = (*Backend)(nil)
	_ backend.BatchReader = (*Backend)(nil)
)

// New returns a Backend using cli. opts may be nil for the defaults.
//
// New does not take ownership of cli: Close closes only what New created;
// close cli yourself after Close.
func New(cli *clientv3.Client, opts *Options) (*Backend, error) {
	if cli == nil {
		return nil, fmt.Errorf("etcd: %w: client is nil", backend.ErrInvalid)
	}
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	b := &Backend{
		cli:      cli,
		cfg:      cfg,
		base:     base,
		cancel:   cancel,
		done:     make(chan struct{}),
		sessions: make(map[int64][]*session),
		granting: make(map[int64]chan struct{}),
		held:     make(map[heldKey]*lease),
	}
	b.own.b = b
	b.txnRanges.Store(maxTxnRanges)
	return b, nil
}

// Leader reports the candidate with the lowest create revision directly
// under the election's directory: its identity (the key's value), its token
// (the create revision) and the time its etcd lease has left.
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := backend.ValidateElection(election); err != nil {
		return backend.Holder{}, fmt.Errorf("etcd: leader: %w", err)
	}
	if err := b.usable("leader", election); err != nil {
		return backend.Holder{}, err
	}
	dir := b.electionDir(election)
	key, opts := candidateRange(dir)
	resp, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.GetResponse, error) {
		return b.cli.Get(ctx, key, opts...)
	})
	if err != nil {
		if ctx.Err() != nil {
			return backend.Holder{}, ctx.Err()
		}
		return backend.Holder{}, fmt.Errorf("etcd: leader %q: %w", election, err)
	}
	q := readQueue(dir, resp.Kvs, "")
	if q.first == nil {
		return backend.Holder{}, fmt.Errorf("etcd: leader %q: %w", election, backend.ErrNoLeader)
	}
	h := backend.Holder{Election: election, Identity: string(q.first.Value), Token: uint64(q.first.CreateRevision)}
	if q.first.Lease != 0 {
		ttl, err := bounded(b, ctx, func(ctx context.Context) (*clientv3.LeaseTimeToLiveResponse, error) {
			return b.cli.TimeToLive(ctx, clientv3.LeaseID(q.first.Lease))
		})
		switch {
		case ctx.Err() != nil:
			return backend.Holder{}, ctx.Err()
		case err == nil && ttl.TTL > 0:
			h.TTL = time.Duration(ttl.TTL) * time.Second
		}
	}
	return h, nil
}

// Close finishes every lease of the Backend (their Lost channels close),
// makes waiting Campaigns return, and revokes the Backend's etcd leases,
// which deletes their keys so successors are elected at once. Revocation is
// bounded by [Options.CleanupTimeout]; leases it cannot revoke expire after
// their TTL. Close does not close the client (see [New]). It is idempotent.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	var all []*session
	for _, ss := range b.sessions {
		all = append(all, ss...)
	}
	b.sessions = nil
	b.mu.Unlock()

	for _, s := range all {
		s.markLost()
	}
	b.cancel()
	b.regs.close()
	if b.clientClosed() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.cleanup)
		defer cancel()
		var wg sync.WaitGroup
		for _, s := range all {
			wg.Go(func() { _, _ = b.cli.Revoke(ctx, s.id) })
		}
		wg.Wait()
	}
	b.wg.Wait()
	return nil
}

// errClientClosed is returned for requests on a client the caller closed:
// etcd's client would retry them until their context ends.
var errClientClosed = errors.New("the etcd client is closed")

// clientClosed returns errClientClosed if the client was closed.
func (b *Backend) clientClosed() error { return clientClosed(b.cli) }

// clientClosed returns errClientClosed if cli was closed.
func clientClosed(cli *clientv3.Client) error {
	if cli.Ctx().Err() != nil {
		return errClientClosed
	}
	return nil
}

// usable returns an error wrapping ErrClosed if the Backend or its client
// was closed.
func (b *Backend) usable(op, election string) error {
	if b.isClosed() {
		return fmt.Errorf("etcd: %s %q: %w", op, election, backend.ErrClosed)
	}
	if err := b.clientClosed(); err != nil {
		return fmt.Errorf("etcd: %s %q: %w: %w", op, election, err, backend.ErrClosed)
	}
	return nil
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// reserve finds or grants a session with the given TTL on which l can write
// its election's key, and records l on it. One grant per TTL is in flight
// at a time: Campaigns that find no session while one is being granted
// wait for it and try to take it, so that a cold start of many Campaigns
// at once shares one etcd lease instead of granting one each.
func (b *Backend) reserve(ctx context.Context, l *lease, ttlSeconds int64) (*session, error) {
	for {
		pick, wait, err := b.pick(l, ttlSeconds)
		switch {
		case err != nil:
			return nil, err
		case pick != nil:
			return pick, nil
		case wait == nil:
			return b.grant(ctx, l, ttlSeconds)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// pick records l on a live session with the given TTL if one can carry it.
// Otherwise it returns the channel of a grant in flight for that TTL, or
// nil after noting that the caller grants one.
func (b *Backend) pick(l *lease, ttlSeconds int64) (pick *session, wait chan struct{}, err error) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, nil, fmt.Errorf("etcd: campaign %q: %w", l.election, backend.ErrClosed)
	}
	kept := b.sessions[ttlSeconds][:0]
	for _, s := range b.sessions[ttlSeconds] {
		if pick == nil {
			took, unused := s.take(l, now)
			if unused {
				continue // finished and unused: forget it
			}
			if took {
				pick = s
			}
		}
		kept = append(kept, s)
	}
	b.sessions[ttlSeconds] = kept
	if pick != nil {
		return pick, nil, nil
	}
	if w := b.granting[ttlSeconds]; w != nil {
		return nil, w, nil
	}
	b.granting[ttlSeconds] = make(chan struct{})
	return nil, nil, nil
}

// grant grants a new session with the given TTL, records l on it and ends
// the grant in flight that pick noted.
func (b *Backend) grant(ctx context.Context, l *lease, ttlSeconds int64) (s *session, err error) {
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch {
		case s != nil && b.closed:
			// Unused; it lapses after its TTL.
			s, err = nil, fmt.Errorf("etcd: campaign %q: %w", l.election, backend.ErrClosed)
		case s != nil:
			b.sessions[ttlSeconds] = append(b.sessions[ttlSeconds], s)
		}
		close(b.granting[ttlSeconds])
		delete(b.granting, ttlSeconds)
	}()
	early, err := b.serversRevokeEarly(clientv3.WithRequireLeader(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("etcd: campaign %q: read server versions: %w", l.election, err)
	}
	sent := time.Now()
	resp, err := bounded(b, clientv3.WithRequireLeader(ctx), func(ctx context.Context) (*clientv3.LeaseGrantResponse, error) {
		return b.cli.Grant(ctx, ttlSeconds)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("etcd: campaign %q: grant lease: %w", l.election, err)
	}
	if resp.TTL != ttlSeconds {
		// The server raised the TTL to its minimum, ceil(1.5 × election
		// timeout): the lease would outlive what the caller asked for.
		_, _ = b.cli.Revoke(ctx, resp.ID)
		return nil, fmt.Errorf("etcd: campaign %q: %w: Candidate.TTL is %ds; the etcd cluster grants no lease shorter than %ds (1.5 × its election timeout): want %ds or more",
			l.election, backend.ErrInvalid, ttlSeconds, resp.TTL, resp.TTL)
	}
	s = newSession(b.cli, b.cfg.drift, resp.ID, resp.TTL, sent, resp.GetRaftTerm(), early)
	s.users[l.election] = l // not shared yet
	return s, nil
}

// unregister frees l's slot on its session and forgets it for Guard.
func (b *Backend) unregister(l *lease) {
	l.s.drop(l)
	b.mu.Lock()
	defer b.mu.Unlock()
	k := heldKey{l.election, l.Token()}
	if b.held[k] == l {
		delete(b.held, k)
	}
}

// startWatch starts l's own-key watch from revision rev, unless the Backend
// is closed.
func (b *Backend) startWatch(l *lease, rev int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return backend.ErrClosed
	}
	b.own.register(l, rev)
	return nil
}

// errClosedOr returns an error wrapping ErrClosed if the Backend is closed,
// else err.
func (b *Backend) errClosedOr(election string, err error) error {
	if b.isClosed() && !errors.Is(err, backend.ErrClosed) {
		return fmt.Errorf("etcd: campaign %q: %w", election, backend.ErrClosed)
	}
	return err
}
