// Package orphans keeps the registry entries that failed Registers may have
// left in a store, one per candidate, so that a driver's next Register of
// the same candidate, or its Close, can clean them up.
package orphans

import (
	"sync"
	"time"
)

// Key names a candidate: one identity in one election.
type Key struct{ Election, Identity string }

// Set holds at most one orphan per [Key] until it is taken, it expires or
// the Set is closed. The zero Set is empty and ready to use; a Set is safe
// for concurrent use.
type Set[T any] struct {
	mu     sync.Mutex
	closed bool
	m      map[Key]orphan[T]
}

type orphan[T any] struct {
	v      T
	expiry time.Time // zero for never
}

func (o orphan[T]) expired(now time.Time) bool {
	return !o.expiry.IsZero() && !now.Before(o.expiry)
}

// Put keeps v as the orphan of k, in place of any other, until expiry
// (never, when it is zero), and drops the orphans that have expired. After
// Close it keeps nothing.
func (s *Set[T]) Put(k Key, v T, expiry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	now := time.Now()
	for k, o := range s.m {
		if o.expired(now) {
			delete(s.m, k)
		}
	}
	if s.m == nil {
		s.m = make(map[Key]orphan[T])
	}
	s.m[k] = orphan[T]{v, expiry}
}

// Take removes the orphan of k and returns it; ok is false when there is
// none, or it has expired.
func (s *Set[T]) Take(k Key) (v T, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, found := s.m[k]
	delete(s.m, k)
	if !found || o.expired(time.Now()) {
		return v, false
	}
	return o.v, true
}

// Clean runs clean on the orphan of k, if there is one and it has not
// expired, with the orphan out of the Set meanwhile; it keeps the orphan,
// with its expiry, unless clean reports that it is gone (or the Set was
// closed meanwhile).
func (s *Set[T]) Clean(k Key, clean func(T) bool) {
	s.mu.Lock()
	o, found := s.m[k]
	delete(s.m, k)
	s.mu.Unlock()
	if !found || o.expired(time.Now()) || clean(o.v) {
		return
	}
	s.Put(k, o.v, o.expiry)
}

// Close removes and returns every orphan that has not expired; the Set
// keeps nothing after it.
func (s *Set[T]) Close() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	now := time.Now()
	var out []T
	for _, o := range s.m {
		if !o.expired(now) {
			out = append(out, o.v)
		}
	}
	s.m = nil
	return out
}
