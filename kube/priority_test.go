package kube

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leaderkit/elector"
)

// prioritized is an elector candidate of a priority on a Backend of its
// own, with its terms recorded.
type prioritized struct {
	id      string
	elected chan elector.Term // each term, when it starts
	mu      sync.Mutex
	reasons []error // of the terms ended
	ended   []time.Time
	stop    func()
}

func runPrioritized(t *testing.T, s server, name, id string, priority int) *prioritized {
	t.Helper()
	p := &prioritized{id: id, elected: make(chan elector.Term, 8)}
	e, err := elector.New(testBackend(t, s, nil), name, &elector.Options{
		Identity: id,
		TTL:      testTTL,
		Priority: priority,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), nil)), // shown when the test fails
		OnElected: func(ctx context.Context, term elector.Term) {
			p.elected <- term
			<-ctx.Done()
			p.mu.Lock()
			p.ended = append(p.ended, time.Now())
			p.mu.Unlock()
		},
		OnRevoked: func(_ elector.Term, r error) {
			p.mu.Lock()
			p.reasons = append(p.reasons, r)
			p.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatalf("elector.New(Priority %d) on kube: %v", priority, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	p.stop = func() { cancel(); <-done }
	t.Cleanup(p.stop)
	return p
}

// Preferred leaders on Leases: a leader of priority 1 yields to a
// candidate of priority 5 that joins (its term ends with ErrPreempted,
// its OnElected returns before the other's starts), the higher one leads
// with a greater token, and both are listed as candidates, the lower one
// standing aside.
func TestPriorityOnLeases(t *testing.T) {
	t.Parallel() // an election of its own; it lists only that election's entries
	s := testServer(t)
	name := testName(t)
	low := runPrioritized(t, s, name, "low", 1)
	var first elector.Term
	select {
	case first = <-low.elected:
	case <-time.After(10 * time.Second):
		t.Fatal("low: not elected within 10s, want it elected alone")
	}
	high := runPrioritized(t, s, name, "high", 5)
	var second elector.Term
	select {
	case second = <-high.elected:
	case <-time.After(4 * testTTL):
		t.Fatalf("high: not elected within %v, want the lower leader to yield to it", 4*testTTL)
	}
	started := time.Now()
	if second.Token <= first.Token {
		t.Errorf("high's token %d, low's %d: want it greater", second.Token, first.Token)
	}
	low.mu.Lock()
	reasons, ended := low.reasons, low.ended
	low.mu.Unlock()
	if len(reasons) != 1 || !errors.Is(reasons[0], elector.ErrPreempted) {
		t.Errorf("low's terms ended with %v, want one reason wrapping ErrPreempted", reasons)
	}
	if len(ended) != 1 || ended[0].After(started) {
		t.Errorf("low's OnElected returned at %v, high's started by %v: want the return first", ended, started)
	}
	list, err := testBackend(t, s, nil).Entries(testCtx(t), name)
	if err != nil || len(list) != 2 {
		t.Fatalf("Entries: got (%v, %v), want low and high", list, err)
	}
	for _, en := range list {
		if want := en.Identity == "low"; en.Aside != want {
			t.Errorf("entry %s: aside %v, want %v: the lower candidate stands aside", en.Identity, en.Aside, want)
		}
	}
	select {
	case term := <-low.elected:
		t.Errorf("low: elected again (token %d) while high leads", term.Token)
	case <-time.After(time.Second):
	}
}
