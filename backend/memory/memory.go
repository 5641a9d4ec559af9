// Package memory is the in-process reference driver of [backend.Backend]: no
// network, no persistence, the full contract. Unit tests and examples run on
// it, and it can simulate the faults the conformance suite and the elector's
// own tests need: a crashed process ([Backend.Crash]), a network partition
// ([Backend.Isolate]) and a lease dropped by the store ([Backend.Expire]).
//
// # Guarantees
//
// Elections live in a store shared by a Backend and its peers ([Backend.Peer]),
// as processes share a server. Waiting candidates are served first come, first
// served; a release or an expiry hands the election to the next waiter at
// once. It keeps a registry of candidates ([backend.Registry]): an entry
// lives TTL after its last write, and goes with its Backend's Close.
//
// # Fencing
//
// Tokens count the leases of an election: the first is 1, each new lease gets
// the next number.
//
// # Timing
//
// Leases expire exactly TTL after their last acquire or renew, on the time
// package's clock, so the driver behaves under testing/synctest as in real
// time. Deadline is exact: there is no network and no drift.
package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leaderkit/elector/backend"
)

// ErrIsolated is returned by every call of a Backend cut off by
// [Backend.Isolate]. It is transient: the call may succeed after
// [Backend.Heal].
var ErrIsolated = errors.New("memory: backend isolated from its store")

// Backend is a handle on an in-memory store of elections, as a client
// connection is a handle on a server. The zero value is not usable; call
// [New].
type Backend struct {
	s    *store
	done chan struct{} // closed by Close or Crash

	mu       sync.Mutex
	closed   bool
	isolated bool
}

// store is shared by a Backend and its peers.
type store struct {
	mu        sync.Mutex
	elections map[string]*election
	nextEntry uint64 // the last registry entry's ID
}

type election struct {
	name    string
	holder  *lease
	token   uint64
	waiters []*waiter
	changed chan struct{} // closed and replaced when the holder changes

	entries   map[string]*entry // the registry of candidates, by ID
	entriesCh chan struct{}     // closed when entries change; nil when nobody waits
}

type waiter struct {
	b       *Backend
	c       backend.Candidate
	granted chan *lease // buffered: receives the lease when it is granted
}

// New returns a Backend on a new, empty store.
func New() *Backend {
	return newBackend(&store{elections: make(map[string]*election)})
}

func newBackend(s *store) *Backend {
	return &Backend{s: s, done: make(chan struct{})}
}

// Peer returns a new Backend on b's store, as a second process connected to
// the same server would have. Closing either does not close the other.
func (b *Backend) Peer() *Backend { return newBackend(b.s) }

// check reports whether b can reach its store.
func (b *Backend) check() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return fmt.Errorf("memory: %w", backend.ErrClosed)
	case b.isolated:
		return ErrIsolated
	}
	return nil
}

// Campaign implements [backend.Backend.Campaign].
func (b *Backend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validate(c); err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	w := &waiter{b: b, c: c, granted: make(chan *lease, 1)}
	s := b.s
	s.mu.Lock()
	e := s.election(c.Election)
	e.waiters = append(e.waiters, w)
	s.handOver(e)
	s.mu.Unlock()

	select {
	case l := <-w.granted:
		return l, nil
	case <-ctx.Done():
	case <-b.done:
	}
	// Withdraw; if the election was granted meanwhile, give it back.
	s.mu.Lock()
	e.removeWaiter(w)
	s.mu.Unlock()
	select {
	case l := <-w.granted:
		_ = l.release()
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, b.check()
}

func validate(c backend.Candidate) error {
	if err := backend.ValidateElection(c.Election); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	if c.TTL < backend.MinTTL {
		return fmt.Errorf("memory: %w: TTL is %v; want at least %v", backend.ErrInvalid, c.TTL, backend.MinTTL)
	}
	return nil
}

// election returns the named election, creating it. s.mu is held.
func (s *store) election(name string) *election {
	e := s.elections[name]
	if e == nil {
		e = &election{name: name, changed: make(chan struct{})}
		s.elections[name] = e
	}
	return e
}

// handOver grants a free election to the first waiter. s.mu is held.
func (s *store) handOver(e *election) {
	if e.holder != nil || len(e.waiters) == 0 {
		return
	}
	w := e.waiters[0]
	e.waiters = e.waiters[1:]
	e.token++
	l := &lease{b: w.b, e: e, c: w.c, token: e.token, lost: make(chan struct{})}
	l.deadline = time.Now().Add(w.c.TTL)
	l.timer = time.AfterFunc(w.c.TTL, func() { s.expire(l) })
	s.setHolder(e, l)
	w.granted <- l
}

// setHolder records a new holder and wakes watchers. s.mu is held.
func (s *store) setHolder(e *election, l *lease) {
	e.holder = l
	close(e.changed)
	e.changed = make(chan struct{})
}

// drop ends l's hold on its election, if it still holds it, and hands the
// election over. It reports whether l was the holder. s.mu is held.
func (s *store) drop(l *lease) bool {
	e := l.e
	if e.holder != l {
		return false
	}
	l.timer.Stop()
	l.end()
	s.setHolder(e, nil)
	s.handOver(e)
	return true
}

// expire is l's TTL timer.
func (s *store) expire(l *lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.e.holder == l && !time.Now().Before(l.deadline) {
		s.drop(l)
	}
}

func (e *election) removeWaiter(w *waiter) {
	for i, x := range e.waiters {
		if x == w {
			e.waiters = append(e.waiters[:i:i], e.waiters[i+1:]...)
			return
		}
	}
}

// Leader implements [backend.Backend.Leader].
func (b *Backend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if err := ctx.Err(); err != nil {
		return backend.Holder{}, err
	}
	if err := backend.ValidateElection(election); err != nil {
		return backend.Holder{}, fmt.Errorf("memory: %w", err)
	}
	if err := b.check(); err != nil {
		return backend.Holder{}, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	e := b.s.elections[election]
	if e == nil || e.holder == nil {
		return backend.Holder{}, fmt.Errorf("memory: election %q: %w", election, backend.ErrNoLeader)
	}
	return e.holder.holder(), nil
}

// Watch implements [backend.Watcher].
func (b *Backend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	first := true
	var last backend.Holder
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.check(); err != nil {
			return err
		}
		b.s.mu.Lock()
		e := b.s.election(election)
		var h backend.Holder
		if e.holder != nil {
			h = e.holder.holder()
			h.TTL = 0 // a changing TTL is not a change of holder
		}
		changed := e.changed
		b.s.mu.Unlock()
		if first || h != last {
			fn(h)
			first, last = false, h
		}
		select {
		case <-changed:
		case <-ctx.Done():
		case <-b.done:
		}
	}
}

// Close implements [backend.Backend.Close]. Leases held through b are freed
// at once, like those of a closed session, and waiting Campaigns return
// [backend.ErrClosed].
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil // already closed, or crashed: a crashed process's leases lapse on their own
	}
	b.closed = true
	close(b.done)
	b.mu.Unlock()

	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	for _, e := range b.s.elections {
		if e.holder != nil && e.holder.b == b {
			b.s.drop(e.holder)
		}
		for _, en := range e.entries {
			if en.b == b {
				b.s.removeEntry(en)
			}
		}
	}
	return nil
}

// Crash simulates the crash of the process owning b: b stops at once, as if
// closed, but its leases are not freed; they stay held in the store until
// their TTL runs out.
func (b *Backend) Crash() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	close(b.done)
}

// Isolate cuts b off from its store, as a network partition would: until
// [Backend.Heal], every call through b fails with [ErrIsolated] and b's
// leases lapse when their TTL runs out.
func (b *Backend) Isolate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.isolated = true
}

// Heal ends an [Backend.Isolate].
func (b *Backend) Heal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.isolated = false
}

// Expire drops the current holder of election as if its TTL had run out,
// without telling the holder's process: its Lost channel closes, its next
// Renew returns [backend.ErrLost], and the next waiter is elected. It reports
// whether there was a holder.
func (b *Backend) Expire(election string) bool {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	e := b.s.elections[election]
	if e == nil || e.holder == nil {
		return false
	}
	return b.s.drop(e.holder)
}

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Watcher = (*Backend)(nil)
)
