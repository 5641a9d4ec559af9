package term

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend"
	"github.com/leaderkit/elector/backend/memory"
)

// The Finish of the last term of a Backend returns once the engine's
// goroutines (scheduler, loss watchers) have stopped, but for returning: no
// goroutine of the engine outlives the terms that started it.
func TestLastFinishLeavesNoGoroutine(t *testing.T) {
	b := memory.New()
	defer b.Close()
	tm := Timing{TTL: 3 * time.Second, RenewInterval: time.Second, SafetyMargin: 600 * time.Millisecond}
	var terms []*Term
	for _, name := range []string{"a", "b", "c"} {
		l, err := b.Campaign(t.Context(), backend.Candidate{Election: name, Identity: "x", TTL: tm.TTL})
		if err != nil {
			t.Fatal(err)
		}
		tt := Start(b, context.Background(), l, l.Deadline(), tm, Hooks{Callback: "test"})
		tt.Go(nil)
		terms = append(terms, tt)
	}
	e := terms[0].e
	e.mu.Lock()
	live := e.live
	e.mu.Unlock()
	if live == 0 {
		t.Fatalf("no goroutine of the engine while 3 terms are held")
	}
	for _, tt := range terms {
		tt.End(errors.New("done"))
		<-tt.Returned()
		if err := tt.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live != 0 || e.running {
		t.Errorf("%d goroutines of the engine left (scheduler running: %v) once the last term finished; want none", e.live, e.running)
	}
}
