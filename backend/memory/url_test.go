package memory_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
	"github.com/leaderkit/elector/backendurl"
)

// TestOpenerOpensPeers: every URL opened through Opener is a separate client
// of one store, so candidates opened that way exclude each other.
func TestOpenerOpensPeers(t *testing.T) {
	store := memory.New()
	defer store.Close()
	var mux backendurl.Mux
	mux.Register("mem", store.Opener())
	a, ca, err := mux.Open(t.Context(), "mem://")
	if err != nil {
		t.Fatalf("Open(mem://): %v", err)
	}
	b, cb, err := mux.Open(t.Context(), "mem://any/path?x=1")
	if err != nil {
		t.Fatalf("Open(mem://any/path?x=1): %v", err)
	}
	defer cb.Close()
	l, err := a.Campaign(t.Context(), backend.Candidate{Election: "e", Identity: "a", TTL: time.Minute})
	if err != nil {
		t.Fatalf("Campaign through the first URL: %v", err)
	}
	h, err := b.Leader(t.Context(), "e")
	if err != nil || h.Token != l.Token() {
		t.Fatalf("Leader through the second URL: got %+v, %v; want token %d: both URLs reach one store", h, err, l.Token())
	}
	if err := ca.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := a.Leader(t.Context(), "e"); !errors.Is(err, backend.ErrClosed) {
		t.Errorf("Leader after Close: got %v, want ErrClosed: the closer closes the peer", err)
	}
}
