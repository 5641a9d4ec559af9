package aimd

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w := New(4, 8, 12)
	for range 3 {
		w.Grow()
	}
	if w.Size() != 11 {
		t.Fatalf("before any cut, 3 timely answers grew 8 to %d, want 11", w.Size())
	}
	w.Grow()
	w.Grow()
	if w.Size() != 12 {
		t.Fatalf("grew past its bound 12: %d", w.Size())
	}
	if !w.Shrink(t0, t0.Add(time.Second)) || w.Size() != 6 {
		t.Fatalf("a failure halved 12 to %d, want 6", w.Size())
	}
	if w.Shrink(t0.Add(time.Millisecond), t0.Add(2*time.Second)) || w.Size() != 6 {
		t.Fatalf("a failure of a request started before the cut cut again: size %d, want 6", w.Size())
	}
	if !w.Congested(t0.Add(1500*time.Millisecond), time.Second) || w.Congested(t0.Add(2500*time.Millisecond), time.Second) {
		t.Errorf("Congested: want true within 1s of the cut at 1s, false after")
	}
	for range 5 {
		w.Grow()
	}
	if w.Size() != 6 {
		t.Fatalf("after a cut, 5 timely answers grew a window of 6 to %d; want one step per window's worth", w.Size())
	}
	w.Grow()
	if w.Size() != 7 {
		t.Fatalf("after a cut, 6 timely answers left the window at %d, want 7", w.Size())
	}
	for i := range 3 {
		w.Shrink(t0.Add(time.Duration(10+i)*time.Second), t0.Add(time.Duration(10+i)*time.Second))
	}
	if w.Size() != 4 {
		t.Errorf("three cuts from 7 left %d, want the floor 4", w.Size())
	}
	if got := w.Cut(); !got.Equal(t0.Add(12 * time.Second)) {
		t.Errorf("Cut() = %v, want the last cut at t0+12s", got)
	}
}
