package migrate_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// markStore is an old store for the tests: a memory store that can also
// keep a persistent holder per election, as a Redis key without expiry or an
// etcd key without a lease would be. Its backends (markBackend) implement
// migrate.Marker.
type markStore struct {
	mem *memory.Backend // the store's first handle; peers share its store

	mu     sync.Mutex
	marker map[string]backend.Holder
}

func newMarkStore() *markStore {
	return &markStore{mem: memory.New(), marker: make(map[string]backend.Holder)}
}

func (s *markStore) marked(election string) (backend.Holder, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.marker[election]
	return h, ok
}

// peer returns a new handle on the store, as another process would have.
func (s *markStore) peer() *markBackend {
	return &markBackend{s: s, mem: s.mem.Peer(), done: make(chan struct{})}
}

// markBackend is one handle on a markStore. An unmodified old-only replica
// campaigns through it directly; a marked election makes its Campaign wait
// forever, as the real stores do behind a persistent holder.
type markBackend struct {
	s    *markStore
	mem  *memory.Backend
	once sync.Once
	done chan struct{}
}

func (b *markBackend) Campaign(ctx context.Context, c backend.Candidate) (backend.Lease, error) {
	for {
		if _, ok := b.s.marked(c.Election); ok {
			select { // behind a holder that never leaves
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-b.done:
				return nil, fmt.Errorf("mark: %w", backend.ErrClosed)
			}
		}
		l, err := b.mem.Campaign(ctx, c)
		if err != nil {
			return nil, err
		}
		if _, ok := b.s.marked(c.Election); !ok {
			return l, nil
		}
		_ = l.Release(context.WithoutCancel(ctx))
	}
}

func (b *markBackend) Leader(ctx context.Context, election string) (backend.Holder, error) {
	if h, ok := b.s.marked(election); ok {
		return h, nil
	}
	return b.mem.Leader(ctx, election)
}

func (b *markBackend) Watch(ctx context.Context, election string, fn func(backend.Holder)) error {
	return b.mem.Watch(ctx, election, func(h backend.Holder) {
		if m, ok := b.s.marked(election); ok {
			h = m
		}
		fn(h)
	})
}

// Mark records the marker, then lets go of held in the memory store; the
// candidates waiting there are woken and find the marker.
func (b *markBackend) Mark(ctx context.Context, election string, held backend.Lease, identity string) error {
	b.s.mu.Lock()
	if _, ok := b.s.marker[election]; !ok {
		b.s.marker[election] = backend.Holder{Election: election, Identity: identity, Token: held.Token()}
	}
	b.s.mu.Unlock()
	return held.Release(ctx)
}

func (b *markBackend) Unmark(ctx context.Context, election string) (bool, error) {
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	_, ok := b.s.marker[election]
	delete(b.s.marker, election)
	return ok, nil
}

func (b *markBackend) Close() error {
	b.once.Do(func() { close(b.done) })
	return b.mem.Close()
}

var _ backend.Watcher = (*markBackend)(nil)
