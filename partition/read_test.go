package partition

import (
	"context"
	"testing"
	"time"

	"github.com/leaderkit/elector/backend/memory"
)

// TestReadNextOneAtATime: the reader has one reading in flight at a time,
// and when several kinds are due the most urgent goes first: every holder
// when the belief was found wrong, then the awaited partitions, then the
// lapsing ones, then a short member's due reading of every holder.
func TestReadNextOneAtATime(t *testing.T) {
	store := memory.New()
	defer store.Close()
	a, err := New(store, "g", 8, &Options{Identity: "a", Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	l := newLoop(a)
	l.view = view{members: []string{"a", "b"}, joined: true, complete: true}
	l.placed = map[int]bool{1: true}
	l.camps[1] = &camp{cancel: func() {}}
	ps := &l.plan
	ps.readNow = true
	ps.awaited, ps.checkAt = map[int]string{1: "b"}, now
	ps.lapsing = map[int]time.Time{2: now}
	ps.readAt = now.Add(-time.Hour) // a reading of every holder is due too

	// next runs readNext twice, as two wakes of the loop before the
	// reading's outcome is in, and returns which kind it started.
	next := func(step string) string {
		t.Helper()
		l.readNext(ctx, now, true)
		if !l.rd.busy {
			t.Fatalf("%s: no reading started", step)
		}
		checkAt, readAt := ps.checkAt, ps.readAt
		l.readNext(ctx, now, true)
		if !ps.checkAt.Equal(checkAt) || !ps.readAt.Equal(readAt) {
			t.Fatalf("%s: readNext started another reading while one was in flight", step)
		}
		defer func() { l.rd.busy = false }() // as the loop does on receiving
		select {
		case <-l.rd.read:
			return "every holder"
		case r := <-l.rd.checked:
			if len(r.parts) != 1 || r.parts[0] != 1 {
				t.Errorf("%s: awaited reading of %v, want [1]", step, r.parts)
			}
			return "awaited"
		case r := <-l.rd.lapsed:
			if len(r.parts) != 1 || r.parts[0] != 2 {
				t.Errorf("%s: lapsing reading of %v, want [2]", step, r.parts)
			}
			delete(ps.lapsing, 2) // as onLapse does with a partition found free
			return "lapsing"
		}
	}
	for i, want := range []string{"every holder", "awaited", "lapsing", "every holder"} {
		if i == 3 {
			ps.readAt = now.Add(-time.Hour) // due again
		}
		if got := next(want); got != want {
			t.Fatalf("reading %d: read %s, want %s", i+1, got, want)
		}
	}
	if ps.readNow {
		t.Errorf("readNow still set after its reading")
	}
}
