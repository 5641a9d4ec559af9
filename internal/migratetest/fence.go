package migratetest

import (
	"sync"
	"testing"

	"github.com/leaderkit/elector"
)

// Fence is the protected resource of a migration test: it records terms
// one at a time and refuses a token at or below the highest it has seen,
// failing the test on two leaders at once or a token that did not rise.
type Fence struct {
	tb      testing.TB
	mu      sync.Mutex
	active  string
	highest uint64
	terms   []elector.Term
	stale   int           // tokens refused
	started chan struct{} // closed and replaced when a term starts
}

// NewFence returns an empty Fence reporting to tb.
func NewFence(tb testing.TB) *Fence {
	return &Fence{tb: tb, started: make(chan struct{})}
}

// NextTerm returns a channel closed when the next term starts.
func (f *Fence) NextTerm() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

// Start records that term t began acting on the resource.
func (f *Fence) Start(t elector.Term) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active != "" {
		f.tb.Errorf("term %v started while %s leads: got two leaders, want one", t, f.active)
	}
	if t.Token <= f.highest {
		f.stale++
		f.tb.Errorf("term %v: token %#x not above the fence's %#x", t, t.Token, f.highest)
	}
	f.active, f.highest = t.Identity, max(f.highest, t.Token)
	f.terms = append(f.terms, t)
	close(f.started)
	f.started = make(chan struct{})
}

// End records that term t stopped acting.
func (f *Fence) End(t elector.Term) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.active == t.Identity {
		f.active = ""
	}
}

// Terms returns the terms recorded so far, in order.
func (f *Fence) Terms() []elector.Term {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]elector.Term(nil), f.terms...)
}

// Stale returns the number of terms whose token the Fence refused.
func (f *Fence) Stale() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stale
}
