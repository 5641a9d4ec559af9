package memory

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/leaderkit/elector/backend"
)

// entry is a candidate's entry in an election's registry. Its mutable
// fields are guarded by the store's mutex.
type entry struct {
	b     *Backend
	e     *election
	id    string
	c     backend.Candidate
	aside bool
	timer *time.Timer // expires the entry TTL after its last refresh
	gone  bool
}

// registration implements [backend.Registration].
type registration struct{ en *entry }

// Register implements [backend.Registry]. An entry lives TTL after its
// last write (Register, SetAside, Refresh), or until its Backend is closed.
func (b *Backend) Register(ctx context.Context, c backend.Candidate, aside bool) (backend.Registration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validate(c); err != nil {
		return nil, err
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.election(c.Election)
	s.nextEntry++
	en := &entry{b: b, e: e, id: strconv.FormatUint(s.nextEntry, 10), c: c, aside: aside}
	en.timer = time.AfterFunc(c.TTL, func() { s.expireEntry(en) })
	if e.entries == nil {
		e.entries = make(map[string]*entry)
	}
	e.entries[en.id] = en
	e.entriesChanged()
	return registration{en}, nil
}

// Entries implements [backend.Registry].
func (b *Backend) Entries(ctx context.Context, election string) ([]backend.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := backend.ValidateElection(election); err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.s.election(election).list(), nil
}

// WatchEntries implements [backend.Registry].
func (b *Backend) WatchEntries(ctx context.Context, election string, fn func([]backend.Entry)) error {
	if err := backend.ValidateElection(election); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := b.check(); err != nil {
			return err
		}
		b.s.mu.Lock()
		e := b.s.election(election)
		list, changed := e.list(), e.entriesCh
		if changed == nil {
			changed = make(chan struct{})
			e.entriesCh = changed
		}
		b.s.mu.Unlock()
		fn(list)
		select {
		case <-changed:
		case <-ctx.Done():
		case <-b.done:
		}
	}
}

// list returns the election's entries. The store's mutex is held.
func (e *election) list() []backend.Entry {
	out := make([]backend.Entry, 0, len(e.entries))
	for _, en := range e.entries {
		out = append(out, backend.Entry{ID: en.id, Identity: en.c.Identity, Priority: en.c.Priority, Aside: en.aside})
	}
	return out
}

// entriesChanged wakes the registry's watchers. The store's mutex is held.
func (e *election) entriesChanged() {
	if e.entriesCh != nil {
		close(e.entriesCh)
		e.entriesCh = nil
	}
}

// removeEntry removes en from its registry. The store's mutex is held.
func (s *store) removeEntry(en *entry) bool {
	if en.gone {
		return false
	}
	en.gone = true
	en.timer.Stop()
	delete(en.e.entries, en.id)
	en.e.entriesChanged()
	return true
}

// expireEntry is en's TTL timer.
func (s *store) expireEntry(en *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeEntry(en)
}

func (r registration) ID() string { return r.en.id }

func (r registration) SetAside(ctx context.Context, aside bool) error {
	return r.write(ctx, func(en *entry) {
		if en.aside != aside {
			en.aside = aside
			en.e.entriesChanged()
		}
	})
}

func (r registration) Refresh(ctx context.Context) error {
	return r.write(ctx, func(*entry) {})
}

// write applies fn to a live entry and refreshes it.
func (r registration) write(ctx context.Context, fn func(*entry)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	en := r.en
	if err := en.b.check(); err != nil {
		return err
	}
	s := en.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if en.gone {
		return fmt.Errorf("memory: entry %s of %q: %w", en.id, en.e.name, backend.ErrLost)
	}
	fn(en)
	en.timer.Reset(en.c.TTL)
	return nil
}

func (r registration) Withdraw(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	en := r.en
	if err := en.b.check(); err != nil {
		return err
	}
	s := en.b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeEntry(en)
	return nil
}

var _ backend.Registry = (*Backend)(nil)
